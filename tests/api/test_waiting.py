"""Acquire with wait_seconds: woken by a release at once, or at the holder's expiry; 409 at the
deadline; no pooled connection held while waiting; releases notify only awaited leases; a release
hands the lease to a waiter of its own process in one commit."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tenure_server.db.leases import QUERIES, Leases
from tenure_server.db.notifications import CHANNEL
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_leases import held, problem, release
from tests.support.lifespan import running

T = TypeVar("T")


async def wait_for(
    api: httpx.AsyncClient, holder: str, wait: float, ttl: float = 60
) -> httpx.Response:
    return await api.post(
        "/v1/leases/close-day/acquire",
        json={"holder": holder, "ttl_seconds": ttl, "wait_seconds": wait},
    )


async def test_a_waiter_is_woken_by_the_release(api: httpx.AsyncClient) -> None:
    """A waiter (30 s) on a 60 s lease holds it right after the release, not at a timeout."""
    lease = await held(api, "close-day", "a", ttl=60)
    waiter = asyncio.create_task(wait_for(api, "b", 30))
    await asyncio.sleep(0.3)
    released_at = time.monotonic()
    assert (await release(api, lease)).status_code == 200
    response = await waiter
    elapsed = time.monotonic() - released_at
    assert response.status_code == 200, response.text
    assert (response.json()["holder"], response.json()["generation"]) == ("b", 2)
    assert elapsed < 1.0


async def test_a_waiter_parks_in_three_statements(
    api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused waiter marks the lease awaited before its refusal is explained, then waits: no
    second acquire and explanation after the mark. The release hands it the lease: the waiter
    sends no statement of its own (the real statements, only recorded)."""
    lease = await held(api, "close-day", "a", ttl=60)
    run: list[str] = []
    recorded = ("acquire_lease", "await_lease", "explain_holding", "hand_over_lease")
    for statement in recorded:
        monkeypatch.setattr(Leases, statement, _recorded(run, getattr(Leases, statement)))
    waiter = asyncio.create_task(wait_for(api, "b", 30))
    await asyncio.sleep(0.3)
    parked = list(run)
    assert (await release(api, lease)).status_code == 200
    assert (await waiter).json()["generation"] == 2
    assert parked == ["acquire_lease", "await_lease", "explain_holding"]
    assert run[len(parked) :] == ["hand_over_lease"]


async def test_a_release_hands_the_lease_to_a_waiter_in_one_commit(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """A waiter of the releasing process is handed the lease by the release's own statement:
    the release and the new holding (generation + 1) are one commit, so a hand-off waits for one
    WAL flush, not two, and nobody can take the lease between them. The release is answered as
    a release alone answers it."""
    lease = await held(api, "close-day", "a", ttl=60)
    waiter = asyncio.create_task(wait_for(api, "b", 30))
    await asyncio.sleep(0.3)
    released = await release(api, lease)
    assert released.status_code == 200, released.text
    alone = await release(api, await held(api, "other", "a", ttl=60))
    assert released.json().keys() == alone.json().keys()
    answer = released.json()
    kept = ("holder", "generation", "ttl_seconds", "acquired_at", "renewed_at", "grant")
    assert {key: answer[key] for key in kept} == {key: lease[key] for key in kept}
    assert (answer["held"], answer["expires_in_seconds"]) == (False, 0)
    assert answer["expires_at"] < lease["expires_at"]  # at the release, by the database clock
    taken = (await waiter).json()
    assert (taken["holder"], taken["generation"]) == ("b", 2)
    events = await connection.fetch(
        "SELECT kind, holder, generation, xmin::text AS xid FROM lease_events"
        " WHERE lease = 'close-day' ORDER BY id"
    )
    kinds = [(event["kind"], event["holder"], event["generation"]) for event in events]
    assert kinds == [("acquired", "a", 1), ("released", "a", 1), ("acquired", "b", 2)]
    assert events[1]["xid"] == events[2]["xid"] != events[0]["xid"]
    # The grant is the new holding's own: it renews and releases as any acquire's.
    renewed = await api.post(
        "/v1/leases/close-day/renew",
        json={"holder": "b", "generation": 2, "ttl_seconds": 60},
    )
    assert renewed.status_code == 200, renewed.text
    assert (await release(api, renewed.json())).status_code == 200


@pytest.mark.parametrize(
    ("change", "answered", "handed"),
    [
        # A mark of another waiter: the holding is the same, the hand-over decides on it.
        ("awaited_until = now() + interval '1 hour'", 200, True),
        # The holding renewed (a new grant): the release names a grant that is no longer its.
        (
            "granted_xact = pg_current_xact_id(), expires_at = expires_at + interval '1 minute'",
            409,
            False,
        ),
        # A column the release answers changed, nothing else: decided again, alone.
        ("renewed_at = renewed_at + interval '1 second'", 200, False),
    ],
)
async def test_a_hand_over_that_waited_for_the_row_decides_on_the_row_it_finds(
    api: httpx.AsyncClient,
    connection: asyncpg.Connection[asyncpg.Record],
    change: str,
    answered: int,
    handed: bool,
) -> None:
    """A release with a waiter parked, sent while another transaction holds the lease's row and
    changes it, waits for the commit and then decides on the row as it is: the waiter is handed
    the lease only when the release's holding is still the row's and its answer unchanged; a
    release decided alone still lets the waiter take the lease, a refused one leaves it waiting."""
    lease = await held(api, "close-day", "a", ttl=60)
    waiter = asyncio.create_task(wait_for(api, "b", 30))
    await asyncio.sleep(0.3)
    transaction = connection.transaction()
    await transaction.start()
    await connection.execute(f"UPDATE leases SET {change} WHERE name = 'close-day'")
    releasing = asyncio.create_task(release(api, lease))
    await asyncio.sleep(0.3)
    assert not releasing.done()  # waiting for the row lock
    await transaction.commit()
    assert (await releasing).status_code == answered
    # Events written by one transaction: the hand-over's release and new holding share one.
    per_transaction = "SELECT count(*) FROM lease_events WHERE lease = 'close-day' GROUP BY xmin"
    if answered == 409:
        await asyncio.sleep(0.3)
        assert not waiter.done()
        waiter.cancel()
        return
    assert (await waiter).json()["generation"] == 2
    together = [row[0] for row in await connection.fetch(per_transaction)]
    assert (2 in together) == handed


async def test_a_refused_release_hands_nothing_over(api: httpx.AsyncClient) -> None:
    """A release naming a past generation is refused and the waiter keeps waiting; the holder's
    own release then hands it the lease."""
    lease = await held(api, "close-day", "a", ttl=60)
    waiter = asyncio.create_task(wait_for(api, "b", 30))
    await asyncio.sleep(0.3)
    stale = await release(api, {**lease, "generation": lease["generation"] + 1})
    assert stale.status_code == 409, stale.text
    await asyncio.sleep(0.3)
    assert not waiter.done()
    assert (await release(api, lease)).status_code == 200
    taken = (await waiter).json()
    assert (taken["holder"], taken["generation"]) == ("b", 2)


async def test_each_release_hands_the_lease_to_exactly_one_waiter(api: httpx.AsyncClient) -> None:
    """Six waiters, each releasing as soon as it holds: every waiter holds the lease once, one
    after another, with generations 2 to 7 and never two at a time (some releases hand over,
    some find every waiter between tries and leave them to race)."""
    lease = await held(api, "close-day", "a", ttl=60)
    holding: list[str] = []
    order: list[tuple[str, int]] = []

    async def wait_then_release(holder: str) -> None:
        response = await wait_for(api, holder, 30)
        assert response.status_code == 200, response.text
        taken = response.json()
        assert holding == [], f"{holder} holds the lease with {holding}"
        holding.append(holder)
        order.append((holder, taken["generation"]))
        await asyncio.sleep(random.uniform(0, 0.02))
        holding.remove(holder)
        assert (await release(api, taken)).status_code == 200

    waiters = [asyncio.create_task(wait_then_release(f"w{i}")) for i in range(6)]
    await asyncio.sleep(0.3)
    assert (await release(api, lease)).status_code == 200
    await asyncio.gather(*waiters)
    assert sorted(holder for holder, _ in order) == [f"w{i}" for i in range(6)]
    assert [generation for _, generation in order] == list(range(2, 8))


def _recorded(run: list[str], method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    async def recorded(self: Leases, *args: object) -> T:
        run.append(method.__name__)
        return await method(self, *args)

    return recorded


async def test_a_waiter_takes_over_when_the_holder_dies(api: httpx.AsyncClient) -> None:
    """With no release (the holder died), the waiter gets the lease right after it expires."""
    await held(api, "close-day", "a", ttl=1)
    started = time.monotonic()
    response = await wait_for(api, "b", 10)
    assert response.status_code == 200, response.text
    assert response.json()["generation"] == 2
    assert time.monotonic() - started < 2.0


async def test_a_waiter_gets_lease_held_at_its_deadline(api: httpx.AsyncClient) -> None:
    """If the lease stays held, the waiter is answered 409 lease-held when its wait ends."""
    await held(api, "close-day", "a", ttl=30)
    started = time.monotonic()
    problem(await wait_for(api, "b", 0.5), 409, "lease-held")
    assert 0.5 <= time.monotonic() - started < 2.0


async def test_a_wait_beyond_the_configured_bound_is_refused(api: httpx.AsyncClient) -> None:
    """wait_seconds above TENURE_MAX_WAIT_SECONDS is 422, naming the field."""
    found = problem(await wait_for(api, "b", 10_000), 422, "validation-error")
    assert found["errors"][0]["field"] == "wait_seconds"


@pytest.fixture
async def small_pool_app(database_url: str) -> FastAPI:
    return create_app(Settings(database_url=database_url, pool_min_size=1, pool_max_size=2))


async def test_many_waiters_do_not_exhaust_the_pool(small_pool_app: FastAPI) -> None:
    """Forty waiters on a pool of two connections: other requests are still answered at once,
    and one release hands the lease to exactly one waiter."""
    app = small_pool_app
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            lease = await held(api, "close-day", "a", ttl=60)
            waiters = [asyncio.create_task(wait_for(api, f"w{i}", 2)) for i in range(40)]
            await asyncio.sleep(0.3)
            started = time.monotonic()
            for i in range(10):
                assert (await held(api, f"other-{i}", "x"))["generation"] == 1
            assert time.monotonic() - started < 2.0
            assert (await release(api, lease)).status_code == 200
            responses = await asyncio.gather(*waiters)
    assert sorted(response.status_code for response in responses) == [200] + [409] * 39


async def _notifications_during(
    database_url: str, action: Callable[[], Awaitable[object]]
) -> list[str]:
    """The release notifications sent while `action` ran, seen by a listener of our own."""
    seen: list[str] = []
    listener = await asyncpg.connect(database_url)
    try:
        await listener.add_listener(CHANNEL, lambda *args: seen.append(str(args[3])))
        await action()
        await asyncio.sleep(0.3)
    finally:
        await listener.close()
    return seen


async def test_a_release_notifies_only_while_someone_waits_elsewhere(
    api: httpx.AsyncClient, database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Nobody waits: the release sends no notification (a notifying commit serialises every
    release in the database). A waiter of another replica marked the lease: the release wakes
    it. A waiter of this process is handed the lease: held again at the commit, there is nothing
    for a waiter elsewhere to take, so nobody is woken."""
    first = await held(api, "close-day", "a", ttl=60)
    quiet = await _notifications_during(database_url, lambda: release(api, first))
    assert quiet == []
    second = await held(api, "close-day", "a", ttl=60)
    await connection.execute(QUERIES["await_lease"], "close-day", 30.0)  # as another replica's
    woken = await _notifications_during(database_url, lambda: release(api, second))
    assert woken == ["close-day"]
    third = await held(api, "close-day", "a", ttl=60)

    async def release_under_a_waiter_here() -> None:
        waiter = asyncio.create_task(wait_for(api, "b", 30))
        await asyncio.sleep(0.3)
        assert (await release(api, third)).status_code == 200
        assert (await waiter).json()["generation"] == 4

    assert await _notifications_during(database_url, release_under_a_waiter_here) == []


async def test_a_release_racing_the_waiters_mark_never_strands_the_waiter(
    api: httpx.AsyncClient,
) -> None:
    """Releases sent at every moment around a waiter's start: the waiter holds the lease well
    before the holding's 60 s expiry each time (woken, or it saw the lease free)."""
    for round_ in range(30):
        name = f"race-{round_}"
        first = await held(api, name, "a", ttl=60)
        waiter = asyncio.create_task(
            api.post(
                f"/v1/leases/{name}/acquire",
                json={"holder": "b", "ttl_seconds": 60, "wait_seconds": 20},
            )
        )
        await asyncio.sleep(random.uniform(0, 0.02))
        assert (await release(api, first)).status_code == 200
        started = time.monotonic()
        response = await waiter
        assert response.status_code == 200, response.text
        assert time.monotonic() - started < 2.0
