"""Claim and complete job windows over HTTP: one completion per occurrence."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.api.test_leases import every_page, held, problem, release

WINDOW = "/v1/jobs/close-day/windows/2026-09-25"


def holding(holder: str, generation: int, lease: str = "close-day") -> dict[str, Any]:
    return {"holder": holder, "lease": lease, "generation": generation}


async def test_claim_then_complete_records_the_occurrence(api: httpx.AsyncClient) -> None:
    """The holder claims the window (attempt 1, running) and completes it (completed)."""
    await held(api, "close-day", "a")
    claimed = await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    assert claimed.status_code == 200, claimed.text
    assert claimed.json() | {"started_at": None} == {
        "job": "close-day",
        "window": "2026-09-25",
        "lease": "close-day",
        "holder": "a",
        "generation": 1,
        "attempt": 1,
        "started_at": None,
        "completed_at": None,
        "status": "running",
        "state": "running",
    }
    completed = await api.post(f"{WINDOW}/complete", json=holding("a", 1))
    assert completed.status_code == 200, completed.text
    assert completed.json()["status"] == "completed"
    assert completed.json()["completed_at"] is not None
    assert (await api.get(WINDOW)).json() == completed.json()


async def test_a_completed_window_is_never_claimed_again(api: httpx.AsyncClient) -> None:
    """A late or repeated run finds the window completed, even with a new holding."""
    lease = await held(api, "close-day", "a")
    await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    done = (await api.post(f"{WINDOW}/complete", json=holding("a", 1))).json()
    assert (await release(api, lease)).status_code == 200
    await held(api, "close-day", "b")
    body = problem(await api.post(f"{WINDOW}/claim", json=holding("b", 2)), 409, "window-completed")
    assert body["completed_at"] == done["completed_at"].replace("Z", "+00:00")


async def test_an_interrupted_run_is_resumed_with_the_next_attempt(api: httpx.AsyncClient) -> None:
    """A window claimed but not completed is claimable by the next holding: attempt 2."""
    await held(api, "close-day", "a", ttl=1)
    await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    await asyncio.sleep(1.1)
    await held(api, "close-day", "b")
    resumed = await api.post(f"{WINDOW}/claim", json=holding("b", 2))
    assert resumed.status_code == 200, resumed.text
    assert (resumed.json()["attempt"], resumed.json()["holder"]) == (2, "b")


async def test_complete_again_returns_the_original_completion(api: httpx.AsyncClient) -> None:
    """Completing twice with the same holding is 200 with the first completed_at."""
    lease = await held(api, "close-day", "a")
    await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    first = await api.post(f"{WINDOW}/complete", json=holding("a", 1))
    assert (await release(api, lease)).status_code == 200
    second = await api.post(f"{WINDOW}/complete", json=holding("a", 1))
    assert second.status_code == 200, second.text
    assert second.json()["completed_at"] == first.json()["completed_at"]


async def test_a_holder_that_lost_its_lease_can_neither_claim_nor_complete(
    api: httpx.AsyncClient,
) -> None:
    """Claim and complete check the lease in their own transaction: an expired holding is
    lease-lost."""
    await held(api, "close-day", "a", ttl=1)
    await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    await asyncio.sleep(1.1)
    problem(await api.post(f"{WINDOW}/complete", json=holding("a", 1)), 409, "lease-lost")
    other = "/v1/jobs/close-day/windows/2026-09-26/claim"
    problem(await api.post(other, json=holding("a", 1)), 409, "lease-lost")
    await held(api, "close-day", "b")
    problem(await api.post(f"{WINDOW}/complete", json=holding("a", 1)), 409, "lease-lost")


async def test_complete_without_a_claim_is_refused(api: httpx.AsyncClient) -> None:
    """Completing a window this holding never claimed is window-not-claimed."""
    await held(api, "close-day", "a")
    problem(await api.post(f"{WINDOW}/complete", json=holding("a", 1)), 409, "window-not-claimed")


async def test_a_window_is_bound_to_the_lease_that_first_claimed_it(
    api: httpx.AsyncClient,
) -> None:
    """A claim of the same window under another lease name is window-lease-mismatch."""
    await held(api, "close-day", "a")
    await held(api, "close-day-eu", "b")
    await api.post(f"{WINDOW}/claim", json=holding("a", 1))
    body = problem(
        await api.post(f"{WINDOW}/claim", json=holding("b", 1, lease="close-day-eu")),
        409,
        "window-lease-mismatch",
    )
    assert body["lease"] == "close-day"


async def test_a_claim_with_a_lower_generation_than_the_window_is_refused(
    api: httpx.AsyncClient,
) -> None:
    """A window resumed by generation 3 refuses generation 2, even if 2 could hold the lease."""
    for generation, holder in ((1, "a"), (2, "b"), (3, "c")):
        lease = await held(api, "close-day", holder)
        assert lease["generation"] == generation
        if generation == 3:
            await api.post(f"{WINDOW}/claim", json=holding("c", 3))
        assert (await release(api, lease)).status_code == 200
    problem(await api.post(f"{WINDOW}/claim", json=holding("b", 2)), 409, "lease-lost")


async def test_get_and_list_windows(api: httpx.AsyncClient) -> None:
    """Windows are listed newest key first, page by page; an unknown window is 404."""
    await held(api, "close-day", "a")
    keys = [f"2026-09-{day:02d}" for day in range(20, 27)]
    for key in keys:
        await api.post(f"/v1/jobs/close-day/windows/{key}/claim", json=holding("a", 1))
    seen = await every_page(api, "/v1/jobs/close-day/windows", {"limit": 4}, field="window")
    assert seen == sorted(keys, reverse=True)
    problem(await api.get("/v1/jobs/close-day/windows/1999-01-01"), 404, "window-not-found")
