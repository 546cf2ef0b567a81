"""POST /v1/leases/renew: many holdings of one holder renewed in one statement, each exactly
as a single renew would."""

from __future__ import annotations

import asyncio

import httpx

from tests.api.test_leases import held, problem


async def renew_many(
    api: httpx.AsyncClient, holder: str, leases: list[tuple[str, int]], ttl: float = 30
) -> httpx.Response:
    return await api.post(
        "/v1/leases/renew",
        json={
            "holder": holder,
            "ttl_seconds": ttl,
            "leases": [{"name": name, "generation": generation} for name, generation in leases],
        },
    )


async def test_held_holdings_are_renewed_and_the_rest_reported_lost(
    api: httpx.AsyncClient,
) -> None:
    """Mine are renewed; an expired one, another holder's, a wrong generation and an unknown
    name are each reported lost — per name, in one answer."""
    for name in ("a", "b", "c"):
        await held(api, name, "me", ttl=5)
    await held(api, "theirs", "other")
    await held(api, "gone", "me", ttl=1)
    await asyncio.sleep(1.1)
    response = await renew_many(
        api, "me", [("a", 1), ("b", 1), ("c", 2), ("theirs", 1), ("gone", 1), ("nothing", 1)]
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert sorted(lease["name"] for lease in body["renewed"]) == ["a", "b"]
    assert all(lease["ttl_seconds"] == 30 and lease["held"] for lease in body["renewed"])
    assert sorted((ref["name"], ref["generation"]) for ref in body["lost"]) == [
        ("c", 2),
        ("gone", 1),
        ("nothing", 1),
        ("theirs", 1),
    ]
    current = (await api.get("/v1/leases/theirs")).json()
    assert current["holder"] == "other"


async def test_a_batch_never_moves_an_expiry_earlier(api: httpx.AsyncClient) -> None:
    """A batch with a shorter TTL keeps the later expiry already granted."""
    lease = await held(api, "a", "me", ttl=60)
    body = (await renew_many(api, "me", [("a", 1)], ttl=5)).json()
    assert body["renewed"][0]["expires_at"] == lease["expires_at"]


async def test_concurrent_overlapping_batches_do_not_deadlock(api: httpx.AsyncClient) -> None:
    """Batches of one holder over the same names in opposite orders all succeed."""
    names = [f"n{i:03d}" for i in range(50)]
    for name in names:
        await held(api, name, "me")
    forward = [(name, 1) for name in names]
    backward = list(reversed(forward))
    responses = await asyncio.gather(
        *(renew_many(api, "me", forward if i % 2 else backward) for i in range(8))
    )
    for response in responses:
        assert response.status_code == 200, response.text
        assert len(response.json()["renewed"]) == 50


async def test_bad_batches_are_refused(api: httpx.AsyncClient) -> None:
    """Empty, duplicated or oversized batches are 422 naming `leases`."""
    problem(await renew_many(api, "me", []), 422, "validation-error")
    duplicated = problem(await renew_many(api, "me", [("a", 1), ("a", 1)]), 422, "validation-error")
    assert duplicated["errors"][0]["field"] == "leases"
    many = [(f"n{i}", 1) for i in range(1001)]
    oversized = problem(await renew_many(api, "me", many), 422, "validation-error")
    assert oversized["errors"][0]["field"] == "leases"
