"""Acquire, renew, release, read and list leases over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

PROBLEM = "application/problem+json"


async def acquire(
    api: httpx.AsyncClient, name: str, holder: str, ttl: float = 30
) -> httpx.Response:
    return await api.post(f"/v1/leases/{name}/acquire", json={"holder": holder, "ttl_seconds": ttl})


async def held(api: httpx.AsyncClient, name: str, holder: str, ttl: float = 30) -> dict[str, Any]:
    response = await acquire(api, name, holder, ttl)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def release(api: httpx.AsyncClient, lease: dict[str, Any]) -> httpx.Response:
    """Release the holding an acquire or renew answered, naming its grant."""
    return await api.post(
        f"/v1/leases/{lease['name']}/release",
        json={
            "holder": lease["holder"],
            "generation": lease["generation"],
            "grant": lease["grant"],
        },
    )


async def every_page(
    api: httpx.AsyncClient, path: str, params: dict[str, str | int], field: str = "name"
) -> list[Any]:
    """`field` of every item of a listing, following next_cursor page by page."""
    seen: list[Any] = []
    cursor: str | None = None
    while True:
        page = (await api.get(path, params=params | ({"cursor": cursor} if cursor else {}))).json()
        seen += [item[field] for item in page["items"]]
        if (cursor := page["next_cursor"]) is None:
            return seen


def problem(response: httpx.Response, status: int, slug: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["type"] == f"/problems/{slug}"
    assert body["status"] == status
    assert body["title"]
    assert body["detail"]
    return body


async def test_a_free_lease_is_granted_with_generation_one(api: httpx.AsyncClient) -> None:
    """The first holder of a new name gets generation 1 and a lease held by the database clock."""
    lease = await held(api, "close-day", "a", ttl=90)
    assert lease["name"] == "close-day"
    assert lease["holder"] == "a"
    assert lease["generation"] == 1
    assert lease["held"] is True
    assert lease["ttl_seconds"] == 90
    assert 89 < lease["expires_in_seconds"] <= 90
    assert lease["acquired_at"] < lease["expires_at"]


async def test_a_held_lease_is_refused_with_holder_and_retry_after(api: httpx.AsyncClient) -> None:
    """Another holder gets 409 lease-held naming the holder, the expiry and when to retry."""
    lease = await held(api, "close-day", "a", ttl=60)
    body = problem(await acquire(api, "close-day", "b"), 409, "lease-held")
    response = await acquire(api, "close-day", "b")
    assert body["holder"] == "a"
    assert body["expires_at"].startswith(lease["expires_at"][:19])
    assert 55 < body["retry_after_seconds"] <= 60
    assert 55 <= int(response.headers["retry-after"]) <= 60


async def test_acquire_is_idempotent_for_the_current_holder(api: httpx.AsyncClient) -> None:
    """A retried acquire by the holder returns the same generation with a later expiry."""
    first = await held(api, "close-day", "a", ttl=10)
    second = await held(api, "close-day", "a", ttl=20)
    assert second["generation"] == first["generation"] == 1
    assert second["acquired_at"] == first["acquired_at"]
    assert second["expires_at"] > first["expires_at"]


async def test_an_expired_lease_is_taken_over_with_the_next_generation(
    api: httpx.AsyncClient,
) -> None:
    """Once the TTL passes, another holder takes the lease and the generation grows by one."""
    await held(api, "close-day", "a", ttl=1)
    await asyncio.sleep(1.1)
    lease = await held(api, "close-day", "b")
    assert (lease["holder"], lease["generation"]) == ("b", 2)


async def test_renew_extends_the_holding(api: httpx.AsyncClient) -> None:
    """The holder renews with its generation: same generation, new expiry, new TTL."""
    lease = await held(api, "close-day", "a", ttl=5)
    response = await api.post(
        "/v1/leases/close-day/renew",
        json={"holder": "a", "generation": lease["generation"], "ttl_seconds": 30},
    )
    assert response.status_code == 200, response.text
    renewed = response.json()
    assert renewed["generation"] == lease["generation"]
    assert renewed["ttl_seconds"] == 30
    assert renewed["expires_at"] > lease["expires_at"]


async def test_renew_after_expiry_is_refused(api: httpx.AsyncClient) -> None:
    """A holding that expired cannot be revived by a renew, even if nobody took it."""
    lease = await held(api, "close-day", "a", ttl=1)
    await asyncio.sleep(1.1)
    response = await api.post(
        "/v1/leases/close-day/renew",
        json={"holder": "a", "generation": lease["generation"], "ttl_seconds": 30},
    )
    problem(response, 409, "lease-lost")


async def test_renew_with_another_generation_or_holder_is_refused(api: httpx.AsyncClient) -> None:
    """Renew needs holder and generation both: a wrong one of either is lease-lost."""
    await held(api, "close-day", "a")
    for body in ({"holder": "a", "generation": 2}, {"holder": "b", "generation": 1}):
        response = await api.post("/v1/leases/close-day/renew", json={**body, "ttl_seconds": 30})
        problem(response, 409, "lease-lost")


async def test_release_expires_the_lease_and_keeps_the_generation(api: httpx.AsyncClient) -> None:
    """Release ends the holding at once; the next acquire gets generation + 1, never 1 again."""
    lease = await held(api, "close-day", "a")
    response = await release(api, lease)
    assert response.status_code == 200, response.text
    released = response.json()
    assert released["held"] is False
    assert released["expires_in_seconds"] == 0
    assert released["generation"] == lease["generation"]
    assert (await held(api, "close-day", "b"))["generation"] == 2


async def test_release_twice_is_answered_like_the_first(api: httpx.AsyncClient) -> None:
    """A client retrying a release after a lost response sees success, not an error."""
    lease = await held(api, "close-day", "a")
    first = await release(api, lease)
    second = await release(api, lease)
    assert first.status_code == second.status_code == 200
    assert first.json()["expires_at"] == second.json()["expires_at"]


async def test_releasing_an_expired_lease_does_not_move_its_expiry(api: httpx.AsyncClient) -> None:
    """least(expires_at, now()): releasing late never pushes the expiry forward."""
    lease = await held(api, "close-day", "a", ttl=1)
    await asyncio.sleep(1.2)
    response = await release(api, lease)
    assert response.status_code == 200, response.text
    assert response.json()["expires_at"] == lease["expires_at"]


async def test_a_holder_that_lost_the_lease_cannot_release_it(api: httpx.AsyncClient) -> None:
    """After a takeover, the old holder's release is lease-lost and the new holding stands."""
    lost = await held(api, "close-day", "a", ttl=1)
    await asyncio.sleep(1.1)
    await held(api, "close-day", "b")
    response = await release(api, lost)
    problem(response, 409, "lease-lost")
    current = (await api.get("/v1/leases/close-day")).json()
    assert (current["holder"], current["generation"], current["held"]) == ("b", 2, True)


async def test_releasing_an_unknown_lease_is_not_found(api: httpx.AsyncClient) -> None:
    """Release of a name that never existed is 404 lease-not-found."""
    response = await api.post(
        "/v1/leases/nothing/release", json={"holder": "a", "generation": 1, "grant": "1"}
    )
    problem(response, 404, "lease-not-found")


async def test_get_lease_reports_it_or_not_found(api: httpx.AsyncClient) -> None:
    """GET shows the lease as the database sees it; an unknown name is 404 lease-not-found."""
    await held(api, "close-day", "a")
    found = await api.get("/v1/leases/close-day")
    assert found.status_code == 200
    assert found.json()["holder"] == "a"
    problem(await api.get("/v1/leases/other"), 404, "lease-not-found")


async def test_list_pages_through_a_prefix_in_name_order(api: httpx.AsyncClient) -> None:
    """Listing by prefix returns only matching names, in order, across pages, each once."""
    names = [f"billing.job-{i:02d}" for i in range(7)] + ["billing_x", "other", "billingz"]
    for name in names:
        await held(api, name, "a")
    seen = await every_page(api, "/v1/leases", {"prefix": "billing.", "limit": 3})
    assert seen == sorted(name for name in names if name.startswith("billing."))


async def test_list_without_prefix_returns_everything(api: httpx.AsyncClient) -> None:
    """No prefix lists every lease; an underscore in a prefix is literal, not a wildcard."""
    for name in ("a_b", "axb", "c"):
        await held(api, name, "h")
    everything = (await api.get("/v1/leases")).json()
    assert [item["name"] for item in everything["items"]] == ["a_b", "axb", "c"]
    literal = (await api.get("/v1/leases", params={"prefix": "a_"})).json()
    assert [item["name"] for item in literal["items"]] == ["a_b"]


async def test_a_bad_cursor_or_limit_is_a_validation_problem(api: httpx.AsyncClient) -> None:
    """A cursor the service did not hand out, or a page size out of bounds, is 422."""
    problem(await api.get("/v1/leases", params={"cursor": "!!!"}), 422, "validation-error")
    problem(await api.get("/v1/leases", params={"limit": 0}), 422, "validation-error")
    problem(await api.get("/v1/leases", params={"limit": 100000}), 422, "validation-error")


async def test_a_late_release_does_not_end_a_later_grant(api: httpx.AsyncClient) -> None:
    """A release naming an older grant — sent before the holder acquired again — ends nothing;
    a release naming the latest grant ends the holding."""
    first = await held(api, "close-day", "a", ttl=30)
    again = await held(api, "close-day", "a", ttl=30)
    assert (first["generation"], again["generation"]) == (1, 1)
    assert first["grant"] != again["grant"]
    problem(await release(api, first), 409, "lease-lost")
    assert (await api.get("/v1/leases/close-day")).json()["held"] is True
    current = await release(api, again)
    assert current.status_code == 200, current.text
    assert current.json()["held"] is False
