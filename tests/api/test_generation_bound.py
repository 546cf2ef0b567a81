"""No generation past tenure.MAX_GENERATION (2**53 - 1) is handed out: a lease that reached it is
refused with 409 generation-exhausted, never a 500, and so is a new name once the generation
floor has reached it; every other lease goes on as before."""

from __future__ import annotations

import asyncio

import httpx

from tenure import MAX_GENERATION
from tenure_server.db.admin import bump_generations
from tests.api.test_fences import verify
from tests.api.test_leases import acquire, held, problem, release


async def test_a_lease_at_the_largest_generation_begins_no_other_holding(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """The holding that got MAX_GENERATION is extended and passes fences; once it ends, no one
    (its holder included, waiting or not, alone or together) acquires the lease again."""
    await held(api, "close-day", "a")
    await bump_generations(database_url, MAX_GENERATION - 2)
    assert (await held(api, "close-day", "b"))["generation"] == MAX_GENERATION
    last = await held(api, "close-day", "b")
    assert last["generation"] == MAX_GENERATION
    assert (await verify(api, "ledger", "close-day", MAX_GENERATION)).status_code == 200
    # A waiter parked meanwhile is not handed the lease: the release is decided alone.
    parked = {"holder": "w", "ttl_seconds": 30, "wait_seconds": 5}
    waiter = asyncio.create_task(api.post("/v1/leases/close-day/acquire", json=parked))
    await asyncio.sleep(0.3)
    assert (await release(api, last)).status_code == 200
    problem(await waiter, 409, "generation-exhausted")

    body = problem(await acquire(api, "close-day", "c"), 409, "generation-exhausted")
    assert body["generation"] == MAX_GENERATION
    assert str(MAX_GENERATION) in body["detail"]
    waiting = {"holder": "c", "ttl_seconds": 30, "wait_seconds": 5}
    response = await api.post("/v1/leases/close-day/acquire", json=waiting)
    problem(response, 409, "generation-exhausted")
    together = await asyncio.gather(*(acquire(api, "close-day", f"h{i}") for i in range(10)))
    for refused in (*together, await acquire(api, "close-day", "b")):
        problem(refused, 409, "generation-exhausted")
    lease = (await api.get("/v1/leases/close-day")).json()
    assert (lease["generation"], lease["holder"], lease["held"]) == (MAX_GENERATION, "b", False)


async def test_a_new_name_is_refused_once_the_floor_reached_the_largest_generation(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """A lease never acquired would start above the floor: generation-exhausted, and no row is
    written; a lease below the bound is acquired as before."""
    await release(api, await held(api, "high", "a"))
    await held(api, "high", "b")
    await held(api, "low", "a")
    assert await bump_generations(database_url, MAX_GENERATION - 2) == (2, 0, MAX_GENERATION)

    body = problem(await acquire(api, "never", "a"), 409, "generation-exhausted")
    assert body["generation"] == MAX_GENERATION
    assert "floor" in body["detail"]
    problem(await api.get("/v1/leases/never"), 404, "lease-not-found")
    assert (await held(api, "low", "b"))["generation"] == MAX_GENERATION


async def test_force_release_at_the_largest_generation_is_refused(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Force-release has no generation to move a lease at the bound to: 409, the holding stays."""
    await held(api, "close-day", "a")
    await bump_generations(database_url, MAX_GENERATION - 2)
    last = await held(api, "close-day", "b")
    forced = await api.post("/v1/leases/close-day/force-release")
    assert problem(forced, 409, "generation-exhausted")["generation"] == MAX_GENERATION
    lease = (await api.get("/v1/leases/close-day")).json()
    assert (lease["generation"], lease["holder"], lease["held"]) == (MAX_GENERATION, "b", True)
    problem(await api.post("/v1/leases/nowhere/force-release"), 404, "lease-not-found")
    assert last["generation"] == MAX_GENERATION
