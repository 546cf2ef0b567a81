"""Fence verifies that arrive together share one statement (verify_fences); each is decided
exactly as the single statement alone would decide it, and a refusal decided before the lease
moved is decided again. Batch verifies that arrive together share statements too, never one
that names a resource twice."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Coroutine
from typing import Any

import asyncpg
import httpx

from tenure_server.app.coalescing import Coalescing
from tenure_server.app.operations import Operations
from tenure_server.db.notifications import ReleaseNotifications
from tenure_server.db.pool import create_pool
from tenure_server.db.repository import Repository
from tenure_server.domain.errors import StaleGeneration, UnknownGeneration
from tenure_server.domain.fences import Fence, VerifyFacts
from tenure_server.domain.requests import Verify
from tests.api.test_batch_verify import verify_many
from tests.api.test_fences import hand_out
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


class _RecordsStatements(Repository):
    """Remembers the verifies of each verify_fences statement, and refuses one that names a
    resource twice (PostgreSQL would: ON CONFLICT cannot change a row twice)."""

    statements: list[list[Verify]]

    async def verify_fences(self, verifies: list[Verify]) -> dict[str, Fence]:
        resources = [verify.resource for verify in verifies]
        assert len(set(resources)) == len(resources), resources
        self.statements.append(verifies)
        return await super().verify_fences(verifies)


async def test_concurrent_batch_verifies_share_statements_and_each_get_their_own_answers(
    database_url: str, api: httpx.AsyncClient
) -> None:
    """Forty batch verifies at once, over overlapping sets of twenty resources: they share
    fewer statements than requests, none naming a resource twice, and each verify of each
    request is answered by its own outcome: the current generation accepted, the superseded
    one stale, a forged one unknown."""
    first = await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    assert (await release(api, first.json())).status_code == 200
    await api.post("/v1/leases/job/acquire", json={"holder": "b", "ttl_seconds": 30})
    resources = [f"store-{index}" for index in range(20)]
    # Alternately from each half: two samples of one half overlap, two of different halves never
    # do, so sharing is certain (eight of all twenty left two samples disjoint about one run in
    # twenty: every request then took a statement of its own).
    halves = (resources[:10], resources[10:])
    wanted = [
        [Verify(resource, "job", random.choice((1, 2, 7))) for resource in sample]
        for sample in (random.sample(halves[index % 2], 8) for index in range(40))
    ]
    pool = await create_pool(
        database_url, min_size=1, max_size=8, statement_timeout_ms=5000, lock_timeout_ms=4000
    )
    try:
        repository = _RecordsStatements(pool, acquire_timeout=5)
        repository.statements = []
        coalescing = Coalescing(max_batch=64, max_statements=2, max_items=1000)
        operations = Operations(repository, ReleaseNotifications(database_url), None, coalescing)
        answers = await asyncio.gather(*(operations.verify_fences(batch) for batch in wanted))
    finally:
        await pool.close()
    assert len(repository.statements) < len(wanted)
    for batch, outcomes in zip(wanted, answers, strict=True):
        for verify, outcome in zip(batch, outcomes, strict=True):
            if verify.generation == 2:
                assert isinstance(outcome, Fence), outcome
                assert (outcome.resource, outcome.lease, outcome.highest) == (
                    verify.resource,
                    "job",
                    2,
                )
            elif verify.generation == 1:
                assert isinstance(outcome, StaleGeneration), outcome
                assert outcome.highest == 2
            else:
                assert isinstance(outcome, UnknownGeneration), outcome


async def test_racing_batch_verifies_never_lower_a_fence(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """While the lease passes from holder to holder (generations 1 to 6), batch verifies of each
    generation over overlapping resources are still in flight as it moves on: each verify is
    accepted with its own generation or refused as stale, and every fence ends at the highest
    generation it accepted."""
    resources = [f"store-{index}" for index in range(10)]

    def batches(generation: int) -> list[Coroutine[Any, Any, httpx.Response]]:
        samples = (random.sample(resources, 6) for _ in range(4))
        return [verify_many(api, [(r, "job", generation) for r in sample]) for sample in samples]

    sent = [(g, sample) for g in range(1, 7) for sample in range(4)]
    responses = await hand_out(api, "job", 6, batches)
    highest: dict[str, int] = {}
    for (generation, _), response in zip(sent, responses, strict=True):
        assert response.status_code == 200, response.text
        for fence in response.json()["accepted"]:
            assert fence["highest"] == generation
            highest[fence["resource"]] = max(highest.get(fence["resource"], 0), generation)
        for refused in response.json()["refused"]:
            assert refused["problem"]["type"] == "/problems/stale-generation", refused
            assert refused["problem"]["highest"] > generation
    rows = await connection.fetch("SELECT resource, highest_generation FROM fences")
    assert {row["resource"]: row["highest_generation"] for row in rows} == highest
