"""Many clients racing the same names against a real PostgreSQL: one winner, ordered generations."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

import asyncpg
import httpx

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_fences import hand_out, verify
from tests.api.test_leases import release
from tests.support.lifespan import running


async def test_fifty_concurrent_acquires_of_a_free_name_grant_exactly_one(
    api: httpx.AsyncClient,
) -> None:
    """Of 50 holders racing for one free lease, exactly one gets it; the rest get lease-held."""
    responses = await asyncio.gather(
        *(
            api.post("/v1/leases/hot/acquire", json={"holder": f"h{i}", "ttl_seconds": 30})
            for i in range(50)
        )
    )
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {200: 1, 409: 49}
    winner = next(r.json() for r in responses if r.status_code == 200)
    assert winner["generation"] == 1
    current = (await api.get("/v1/leases/hot")).json()
    assert (current["holder"], current["generation"]) == (winner["holder"], 1)


async def test_generations_grow_by_one_per_change_of_holder(api: httpx.AsyncClient) -> None:
    """Holders cycling acquire → release concurrently see every generation once, in order."""
    granted: list[tuple[int, str]] = []

    async def cycle(holder: str) -> None:
        for _ in range(15):
            response = await api.post(
                "/v1/leases/cycle/acquire", json={"holder": holder, "ttl_seconds": 30}
            )
            if response.status_code != 200:
                await asyncio.sleep(random.random() / 200)
                continue
            granted.append((response.json()["generation"], holder))
            released = await release(api, response.json())
            assert released.status_code == 200, released.text

    await asyncio.gather(*(cycle(f"h{i}") for i in range(6)))
    generations = [generation for generation, _ in granted]
    assert len(generations) > 6
    assert sorted(generations) == list(range(1, len(generations) + 1))
    final = (await api.get("/v1/leases/cycle")).json()
    assert final["generation"] == len(generations)


async def test_concurrent_claims_under_two_leases_cannot_both_succeed(
    api: httpx.AsyncClient,
) -> None:
    """Two holders of two different leases racing to claim one window: one wins, one is refused."""
    for round_ in range(10):
        window = f"/v1/jobs/close-day/windows/2026-09-{round_ + 1:02d}/claim"
        for lease, holder in (("lease-a", "a"), ("lease-b", "b")):
            await api.post(
                f"/v1/leases/{lease}/acquire", json={"holder": holder, "ttl_seconds": 30}
            )
        responses = await asyncio.gather(
            api.post(window, json={"holder": "a", "lease": "lease-a", "generation": 1}),
            api.post(window, json={"holder": "b", "lease": "lease-b", "generation": 1}),
        )
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [200, 409], [r.text for r in responses]
        refused = next(r.json() for r in responses if r.status_code == 409)
        assert refused["type"] == "/problems/window-lease-mismatch"


async def test_concurrent_verifies_keep_the_highest_generation(api: httpx.AsyncClient) -> None:
    """Verifies of many generations at once, each generation's still in flight as the lease
    moves on, end with the maximum, and no generation is accepted after a higher one was: a
    verify sent after a higher one was answered 200 is refused."""
    accepted: list[tuple[int, float, float]] = []  # generation, sent, answered

    async def one(generation: int) -> None:
        sent = time.monotonic()
        response = await verify(api, "payments", "close-day", generation)
        answered = time.monotonic()
        if response.status_code == 200:
            assert response.json()["highest"] == generation
            accepted.append((generation, sent, answered))
        else:
            assert response.json()["type"] == "/problems/stale-generation", response.text
            assert response.json()["highest"] > generation

    await hand_out(api, "close-day", 30, lambda generation: [one(generation) for _ in range(3)])
    for low, low_sent, _ in accepted:
        for high, _, high_answered in accepted:
            assert not (low < high and low_sent > high_answered), (low, high)
    assert (await verify(api, "payments", "close-day", 30)).json()["highest"] == 30


async def test_a_serializable_database_default_does_not_turn_refusals_into_errors(
    database_url: str, settings: Settings
) -> None:
    """The pool pins READ COMMITTED, so racing acquires on a database whose default is
    SERIALIZABLE still get one 200 and 409s — never a serialization failure or a 500."""
    connection = await asyncpg.connect(database_url)
    try:
        database = await connection.fetchval("SELECT current_database()")
        await connection.execute(
            f"ALTER DATABASE {database} SET default_transaction_isolation = 'serializable'"
        )
    finally:
        await connection.close()
    app = create_app(settings)
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            responses = await asyncio.gather(
                *(
                    api.post("/v1/leases/hot/acquire", json={"holder": f"h{i}", "ttl_seconds": 30})
                    for i in range(30)
                )
            )
    assert Counter(response.status_code for response in responses) == {200: 1, 409: 29}
