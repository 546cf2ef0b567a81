"""The fencing story on the live stream: a refused verify is `fence.rejected` and an operator's
force-release is `lease.force_released`, sent to readers on every replica (through PostgreSQL,
as every event is), and a fence rejection only to a reader of both its resource and its lease."""

from __future__ import annotations

from pydantic import SecretStr

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_fences import verify
from tests.api.test_leases import held, problem, release
from tests.support.event_streams import served, stream
from tests.support.tokens import bearer, tokens_toml


async def test_rejections_and_force_releases_reach_a_reader_on_another_replica(
    settings: Settings,
) -> None:
    """Two replicas on one database: a stale verify and a force-release served by the first
    arrive on a stream of the second, with the refused token, why, and who forced what."""
    async with (
        served(create_app(settings)) as first,
        served(create_app(settings)) as second,
        stream(second) as events,
    ):
        old = await held(first, "close-day", "w1")
        assert (await release(first, old)).status_code == 200
        new = await held(first, "close-day", "w2")
        assert (await verify(first, "payouts", "close-day", 2)).status_code == 200
        problem(await verify(first, "payouts", "close-day", 1), 409, "stale-generation")
        forced = await first.post("/v1/leases/close-day/force-release")
        assert forced.status_code == 200, forced.text
        rejected = await events.until("fence.rejected")
        force_released = await events.until("lease.force_released")

    assert rejected.id is not None
    assert rejected.data | {"at": None} == {
        "type": "fence.rejected",
        "at": None,
        "resource": "payouts",
        "lease": "close-day",
        "generation": 1,
        "reason": "stale_generation",
        "highest": 2,
    }
    assert force_released.data | {"at": None} == {
        "type": "lease.force_released",
        "at": None,
        "lease": "close-day",
        "holder": "(force-released)",
        "generation": new["generation"] + 1,
        "previous_holder": "w2",
        "previous_generation": new["generation"],
        "actor": "anonymous",
    }


async def test_a_fence_rejection_needs_both_its_names_in_the_readers_namespaces(
    database_url: str,
) -> None:
    """billing-reader (namespace `billing.`) is not sent the rejection of `ops.ledger` under
    lease `billing.close` (its lease only), nor of `billing.ledger` under `ops.sync` (its
    resource only); it is sent the one of `billing.ledger` under `billing.close`. An admin
    stream gets all three, in order. The overview's recent events show the reader that one
    only."""
    settings = Settings(database_url=database_url, tokens=SecretStr(tokens_toml()))
    client = bearer("every-client")
    refused = [
        ("ops.ledger", "billing.close"),
        ("billing.ledger", "ops.sync"),
        ("billing.ledger", "billing.close"),
    ]
    async with (
        served(create_app(settings)) as api,
        stream(api, headers=bearer("billing-reader")) as reader,
        stream(api, headers=bearer("admin")) as admin,
    ):
        for lease in ("billing.close", "ops.sync"):
            grant = {"holder": "h", "ttl_seconds": 30}
            acquired = await api.post(f"/v1/leases/{lease}/acquire", json=grant, headers=client)
            assert acquired.status_code == 200, acquired.text
        for resource, lease in refused:
            answer = await api.post(
                f"/v1/fences/{resource}/verify",
                json={"lease": lease, "generation": 99},
                headers=client,
            )
            problem(answer, 422, "unknown-generation")
        seen_by_admin = [await admin.until("fence.rejected") for _ in refused]
        seen_by_reader = await reader.until("fence.rejected")
        overview = await api.get("/v1/overview", headers=bearer("billing-reader"))

    assert [(e.data["resource"], e.data["lease"]) for e in seen_by_admin] == refused
    assert (seen_by_reader.data["resource"], seen_by_reader.data["lease"]) == refused[2]
    assert seen_by_reader.data["reason"] == "unknown_generation"
    # The overview's recent events (/ui, `tenure status`) apply the same rule.
    fences = [event for event in overview.json()["events"] if event["scope"] == "fence"]
    assert [(event["subject"], event["detail"].split(",")[0]) for event in fences] == [
        ("billing.ledger", "lease billing.close")
    ]
