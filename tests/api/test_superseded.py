"""A generation that lost its turn is refused everywhere: by every fence, known or fresh, after a
force-release and after a restore that forgot leases; and a late release ends no later grant."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import pytest

from tenure_server.db.admin import bump_generations
from tests.api.test_batch_verify import verify_many
from tests.api.test_fences import verify
from tests.api.test_leases import held, problem, release


async def test_a_superseded_generation_is_refused_by_a_resource_it_never_wrote_to(
    api: httpx.AsyncClient,
) -> None:
    """Generation 1 was handed on to generation 2: a fresh resource refuses 1 (single, batch and
    concurrent single verifies alike) with the lease's generation as the highest; 2 passes, again
    and again; 3 was never handed out."""
    first = await held(api, "close-day", "a")
    assert (await release(api, first)).status_code == 200
    await held(api, "close-day", "b")

    body = problem(await verify(api, "fresh", "close-day", 1), 409, "stale-generation")
    assert body["highest"] == 2
    batch = await verify_many(api, [("fresh-b1", "close-day", 1), ("fresh-b2", "close-day", 2)])
    assert [fence["resource"] for fence in batch.json()["accepted"]] == ["fresh-b2"]
    [refusal] = batch.json()["refused"]
    assert refusal["problem"]["type"] == "/problems/stale-generation"
    together = await asyncio.gather(
        *(verify(api, f"fresh-c{i}", "close-day", 1) for i in range(20))
    )
    for response in together:
        problem(response, 409, "stale-generation")

    for _ in range(2):
        assert (await verify(api, "fresh", "close-day", 2)).status_code == 200
    problem(await verify(api, "other", "close-day", 3), 422, "unknown-generation")


async def test_after_force_release_the_forced_generation_is_refused_everywhere(
    api: httpx.AsyncClient,
) -> None:
    """Force-release moves the lease to a generation handed to nobody: the old holder's token is
    refused by a resource it wrote to and by one it never touched, the moved-to generation is no
    holder's token, and the next holder gets a generation above both and passes."""
    old = await held(api, "close-day", "a")
    assert (await verify(api, "ledger", "close-day", 1)).status_code == 200
    forced = await api.post("/v1/leases/close-day/force-release")
    assert forced.status_code == 200, forced.text
    assert forced.json()["generation"] == 2

    problem(await verify(api, "ledger", "close-day", old["generation"]), 409, "stale-generation")
    problem(await verify(api, "stock", "close-day", old["generation"]), 409, "stale-generation")
    problem(await verify(api, "stock", "close-day", 2), 422, "unknown-generation")

    new = await held(api, "close-day", "b")
    assert new["generation"] == 3
    problem(await verify(api, "stock", "close-day", 2), 409, "stale-generation")
    assert (await verify(api, "stock", "close-day", 3)).status_code == 200
    assert (await verify(api, "ledger", "close-day", 3)).status_code == 200


async def test_a_lease_forgotten_by_a_restore_starts_above_every_generation_it_handed_out(
    api: httpx.AsyncClient, database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Handed out to generation 2, then its rows lost to a point-in-time restore: after the bump
    the next acquire starts above 2, and a holder still carrying 2 is refused."""
    first = await held(api, "close-day", "a")
    await release(api, first)
    second = await held(api, "close-day", "b")
    assert second["generation"] == 2
    await connection.execute("DELETE FROM leases WHERE name = 'close-day'")
    await connection.execute("DELETE FROM fences WHERE lease = 'close-day'")

    await bump_generations(database_url, 10)
    again = await held(api, "close-day", "c")
    assert again["generation"] > 2
    problem(await verify(api, "ledger", "close-day", 2), 409, "stale-generation")
    assert (await verify(api, "ledger", "close-day", again["generation"])).status_code == 200


async def test_a_bump_by_the_acquires_lost_hands_the_generation_it_moves_to_nobody(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Restored to generation 1 after two acquires were lost (2 and 3, still held by their
    holders), a bump by 2 moves the lease to 3 and hands it to nobody: no fence accepts 3 or 2,
    and the next holder gets 4, which fences accept."""
    await held(api, "close-day", "a")
    await bump_generations(database_url, 2)
    problem(await verify(api, "fresh", "close-day", 3), 422, "unknown-generation")
    problem(await verify(api, "fresh", "close-day", 2), 409, "stale-generation")
    assert (await held(api, "close-day", "b"))["generation"] == 4
    problem(await verify(api, "fresh", "close-day", 3), 409, "stale-generation")
    assert (await verify(api, "fresh", "close-day", 4)).status_code == 200


async def test_the_generation_floor_only_rises(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """No statement lowers the floor or removes it; the bump raises it past every generation
    known, by the amount."""
    await connection.execute(
        "INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at,"
        " expires_at, acquired_xact) VALUES ('x', 'a', 40, 1, now(), now(), now(), '1')"
    )
    assert await bump_generations(database_url, 5) == (1, 0, 45)
    for statement in (
        "UPDATE tenure_generation_floor SET generation = 0",
        "DELETE FROM tenure_generation_floor",
        "TRUNCATE tenure_generation_floor",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await connection.execute(statement)
    assert await connection.fetchval("SELECT generation FROM tenure_generation_floor") == 45


async def test_a_release_must_name_its_grant(api: httpx.AsyncClient) -> None:
    """Holder and generation alone cannot tell a late release from a current one: without the
    grant the release is refused as invalid, and the holding stays."""
    lease = await held(api, "close-day", "a")
    body = problem(
        await api.post("/v1/leases/close-day/release", json={"holder": "a", "generation": 1}),
        422,
        "validation-error",
    )
    assert [error["field"] for error in body["errors"]] == ["grant"]
    assert (await api.get("/v1/leases/close-day")).json()["held"] is True
    assert (await release(api, lease)).status_code == 200
