"""Statements that meet a locked row: a fenced transaction holds the lease row FOR SHARE, or a
fence row is locked by another statement. Answers stay honest after the wait, one busy lease
never fails a batch, and fences are always locked in one order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest

from tenure_server.db.admin import bump_generations
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_batch_verify import verify_many
from tests.api.test_fences import verify
from tests.api.test_leases import held, problem


@asynccontextmanager
async def serving(database_url: str, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=database_url, pool_min_size=1, **settings))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            yield api


@asynccontextmanager
async def fenced_transaction(
    connection: asyncpg.Connection[asyncpg.Record], lease: str
) -> AsyncIterator[None]:
    """What `tenure.pg.fenced_transaction` does to the lease row while a job writes."""
    async with connection.transaction():
        await connection.execute("SELECT 1 FROM leases WHERE name = $1 FOR SHARE", lease)
        yield


async def test_a_renew_that_waited_past_the_expiry_is_lost_and_extends_nothing(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """TTL 1 s, the row held FOR SHARE for 3 s while a renew and a competing acquire wait on it:
    the renew is lease-lost (its holding lapsed while it waited), the competitor holds generation
    2, and no answer says the first holding is held."""
    async with serving(database_url, lock_timeout_ms=10_000) as api:
        await held(api, "close-day", "a", ttl=1)
        async with fenced_transaction(connection, "close-day"):
            renew = asyncio.ensure_future(
                api.post(
                    "/v1/leases/close-day/renew",
                    json={"holder": "a", "generation": 1, "ttl_seconds": 1},
                )
            )
            acquire = asyncio.ensure_future(
                api.post("/v1/leases/close-day/acquire", json={"holder": "b", "ttl_seconds": 30})
            )
            await asyncio.sleep(3)
            assert not renew.done()
            assert not acquire.done()
        problem(await renew, 409, "lease-lost")
        taken = await acquire
        assert taken.status_code == 200, taken.text
        assert (taken.json()["holder"], taken.json()["generation"]) == ("b", 2)
        assert taken.json()["held"] is True
        current = (await api.get("/v1/leases/close-day")).json()
        assert (current["holder"], current["generation"]) == ("b", 2)


async def test_an_acquire_that_waited_answers_by_the_clock_after_the_wait(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """The holder re-acquiring after a 2 s wait on the row lock gets a new holding (its first
    lapsed while it waited) with a full TTL left, by the clock after the wait."""
    async with serving(database_url, lock_timeout_ms=10_000) as api:
        await held(api, "close-day", "a", ttl=1)
        async with fenced_transaction(connection, "close-day"):
            again = asyncio.ensure_future(
                api.post("/v1/leases/close-day/acquire", json={"holder": "a", "ttl_seconds": 1})
            )
            await asyncio.sleep(2)
        lease = (await again).json()
        assert lease["generation"] == 2
        assert lease["held"] is True
        assert 0.9 < lease["expires_in_seconds"] <= 1


async def renew_all(api: httpx.AsyncClient, names: list[str]) -> dict[str, Any]:
    response = await api.post(
        "/v1/leases/renew",
        json={
            "holder": "worker",
            "ttl_seconds": 30,
            "leases": [{"name": name, "generation": 1} for name in names],
        },
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_one_fenced_lease_never_fails_a_batch_renew(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """One of five leases is held FOR SHARE past the lock timeout: the other four are renewed
    at once and the busy one is undecided (neither renewed nor lost); held FOR SHARE briefly, it
    is renewed with the others once the fenced transaction commits."""
    names = [f"job-{i}" for i in range(5)]
    async with serving(database_url, lock_timeout_ms=500) as api:
        for name in names:
            await held(api, name, "worker")
        async with fenced_transaction(connection, "job-2"):
            started = time.monotonic()
            answer = await renew_all(api, names)
            assert time.monotonic() - started < 3
        assert sorted(lease["name"] for lease in answer["renewed"]) == [
            "job-0",
            "job-1",
            "job-3",
            "job-4",
        ]
        assert answer["lost"] == []
        assert answer["undecided"] == [{"name": "job-2", "generation": 1}]

        async with fenced_transaction(connection, "job-2"):
            pending = asyncio.ensure_future(renew_all(api, names))
            await asyncio.sleep(0.2)
        answer = await pending
        assert sorted(lease["name"] for lease in answer["renewed"]) == names
        assert (answer["lost"], answer["undecided"]) == ([], [])


async def _force_release(api: httpx.AsyncClient, database_url: str) -> None:
    response = await api.post("/v1/leases/close-day/force-release")
    assert response.status_code == 200, response.text


async def _bump(api: httpx.AsyncClient, database_url: str) -> None:
    await bump_generations(database_url, 10)


@pytest.mark.parametrize("raise_fences", [_force_release, _bump], ids=["force-release", "bump"])
async def test_fences_are_locked_in_resource_order_by_every_statement(
    api: httpx.AsyncClient,
    database_url: str,
    connection: asyncpg.Connection[asyncpg.Record],
    raise_fences: Callable[[httpx.AsyncClient, str], Awaitable[None]],
) -> None:
    """Nine fences of one lease written in reverse order; one of them locked while a statement
    that raises them all and a batch verify of all nine both wait for it. Were the raise to
    lock fences in the table's order and the batch in resource order, each would then hold
    what the other waits for (a deadlock, 503); both complete, and the batch is refused."""
    await held(api, "close-day", "a")
    resources = [f"r{i}" for i in range(1, 10)]
    for resource in reversed(resources):
        assert (await verify(api, resource, "close-day", 1)).status_code == 200
    async with connection.transaction():
        await connection.execute("SELECT 1 FROM fences WHERE resource = 'r5' FOR UPDATE")
        raising = asyncio.ensure_future(raise_fences(api, database_url))
        await asyncio.sleep(0.3)
        batch = asyncio.ensure_future(
            verify_many(api, [(resource, "close-day", 1) for resource in resources])
        )
        await asyncio.sleep(0.3)
    await raising
    answer = await batch
    assert answer.status_code == 200, answer.text
    refused = answer.json()["refused"]
    assert [refusal["problem"]["type"] for refusal in refused] == ["/problems/stale-generation"] * 9
