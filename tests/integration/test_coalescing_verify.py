"""Fence verifies that arrive together share one statement (verify_fences); each is decided
exactly as the single statement alone would decide it, and a refusal decided before the lease
moved is decided again."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import asyncpg
import httpx

from tenure_server.app.operations import Operations
from tenure_server.db.notifications import ReleaseNotifications
from tenure_server.db.pool import create_pool
from tenure_server.db.repository import Repository
from tenure_server.domain.fences import Fence, VerifyFacts
from tenure_server.domain.requests import Verify
from tests.api.test_leases import release


async def test_concurrent_verifies_each_get_their_own_answer(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Sixty single verifies at once over twenty resources (coalesced into shared statements):
    the current generation passes everywhere, the superseded one nowhere (whether the resource
    had seen the current one or not), a forged one nowhere; each refusal answered and recorded
    as a single verify's."""
    first = await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    assert (await release(api, first.json())).status_code == 200
    second = await api.post("/v1/leases/job/acquire", json={"holder": "b", "ttl_seconds": 30})
    assert second.json()["generation"] == 2
    resources = [f"store-{index}" for index in range(20)]
    for resource in resources[:10]:  # these have seen generation 2 already
        await api.post(f"/v1/fences/{resource}/verify", json={"lease": "job", "generation": 2})
    wanted = [(resource, generation) for resource in resources for generation in (1, 2, 7)]
    random.shuffle(wanted)
    responses = await asyncio.gather(
        *(
            api.post(f"/v1/fences/{resource}/verify", json={"lease": "job", "generation": g})
            for resource, g in wanted
        )
    )
    answered = {
        (resource, generation): response
        for (resource, generation), response in zip(wanted, responses, strict=True)
    }
    for resource in resources:
        assert answered[resource, 2].status_code == 200, answered[resource, 2].text
        assert answered[resource, 7].json()["type"] == "/problems/unknown-generation"
        stale = answered[resource, 1]
        assert stale.status_code == 409, stale.text
        assert stale.json()["type"] == "/problems/stale-generation"
        assert stale.json()["highest"] == 2
    highest = await connection.fetch("SELECT resource, highest_generation FROM fences")
    assert {row["resource"]: row["highest_generation"] for row in highest} == dict.fromkeys(
        resources, 2
    )
    refusals = await connection.fetch("SELECT kind, generation FROM fence_events")
    assert Counter((row["kind"], row["generation"]) for row in refusals) == {
        ("unknown_generation", 7): 20,
        ("stale_generation", 1): 20,
    }


class _MovesBeforeExplaining(Repository):
    """Hands `job` to its next holder (generation 2) after a statement refused a verify and
    before the refusal is explained: the race the explanation may lose."""

    async def explain_fences(self, verifies: list[Verify]) -> list[VerifyFacts]:
        async with self.connection() as connection:
            await connection.execute(
                "UPDATE leases SET generation = 2, holder = 'b' WHERE name = 'job'"
            )
        return await super().explain_fences(verifies)


async def test_a_verify_refused_before_the_lease_moved_is_decided_again(
    database_url: str, api: httpx.AsyncClient
) -> None:
    """Generation 2 is unknown when the batch decides, handed out before the refusal is
    explained: it is decided again, and accepted, rather than refused by a stale explanation."""
    await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    pool = await create_pool(
        database_url, min_size=1, max_size=2, statement_timeout_ms=5000, lock_timeout_ms=4000
    )
    try:
        repository = _MovesBeforeExplaining(pool, acquire_timeout=5)
        operations = Operations(repository, ReleaseNotifications(database_url))
        (outcome,) = await operations.verify_fences([Verify("store", "job", 2)])
    finally:
        await pool.close()
    assert isinstance(outcome, Fence)
    assert (outcome.resource, outcome.highest) == ("store", 2)
