"""Statements that meet a locked row: a fenced transaction holds the lease row FOR SHARE, or a
fence row is locked by another statement. Answers stay honest after the wait, one busy lease
never fails a batch, renewals waiting on locked rows leave the pool to other requests, and fences
are always locked in one order."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from tenure_server.app.lock_waits import DEFAULT_LOCK_WAITS
from tenure_server.db.admin import bump_generations
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_batch_verify import verify_many
from tests.api.test_fences import verify
from tests.api.test_leases import held, problem
from tests.support.lifespan import running
from tests.support.tokens import bearer, tokens_toml


@asynccontextmanager
async def serving(
    database_url: str, *, headers: dict[str, str] | None = None, **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    given: dict[str, Any] = {"database_url": database_url, "pool_min_size": 1} | settings
    app = create_app(Settings(**given))
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=headers
        ) as api:
            yield api


@asynccontextmanager
async def fenced_transaction(
    connection: asyncpg.Connection[asyncpg.Record], *leases: str
) -> AsyncIterator[None]:
    """What `tenure.pg.fenced_transaction` does to the lease rows while a job writes."""
    async with connection.transaction():
        await connection.execute(
            "SELECT 1 FROM leases WHERE name = ANY($1::text[]) FOR SHARE", list(leases)
        )
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


async def renew_all(
    api: httpx.AsyncClient, names: list[str], holder: str = "worker"
) -> dict[str, Any]:
    response = await api.post(
        "/v1/leases/renew",
        json={
            "holder": holder,
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


async def lock_waits_settled(connection: asyncpg.Connection[asyncpg.Record]) -> int:
    """How many of the service's statements wait on a row lock, once that number has stayed the
    same for half a second: the requests sent have all met the lock."""
    counted, since = -1, time.monotonic()
    while True:
        waiting = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'tenure' AND wait_event_type = 'Lock'"
        )
        if waiting != counted:
            counted, since = waiting, time.monotonic()
        elif waiting > 0 and time.monotonic() - since >= 0.5:
            return int(waiting)
        await asyncio.sleep(0.05)


# Renewals of rows locked past the lock timeout would hold the pool for 30 s, and an acquire
# would wait as long for a connection: answered within 1 s, it waited for neither. The whole
# pool is opened at start-up, so the acquire connects to nothing while it is timed.
PATIENT = {
    "lock_timeout_ms": 30_000,
    "statement_timeout_ms": 40_000,
    "pool_acquire_timeout_seconds": 30,
    "pool_min_size": 10,
    "pool_max_size": 10,
    "tokens": SecretStr(tokens_toml()),
}


async def acquired_within_a_second(api: httpx.AsyncClient, name: str) -> None:
    """Another principal acquires `name` on the same replica, and is answered within 1 s."""
    started = time.monotonic()
    response = await asyncio.wait_for(
        api.post(
            f"/v1/leases/{name}/acquire",
            json={"holder": "reporter", "ttl_seconds": 30},
            headers=bearer("ops-client"),
        ),
        timeout=1,
    )
    assert response.status_code == 200, response.text
    assert time.monotonic() - started < 1


async def test_batch_renews_of_locked_holdings_leave_the_pool_to_other_requests(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Three concurrent batch renews of 30 holdings each, all held FOR SHARE by a fenced
    transaction: two statements wait on the rows (TENURE_LOCK_WAIT_MAX_CONNECTIONS), another
    principal's acquire on the same replica answers within 1 s, and every holding is answered
    renewed or undecided, none lost."""
    holdings = {f"worker-{w}": [f"billing.job-{w}-{i}" for i in range(30)] for w in range(3)}
    async with serving(database_url, headers=bearer("billing-client"), **PATIENT) as api:
        await acquired_within_a_second(api, "ops.warm-up")
        for holder, names in holdings.items():
            for name in names:
                await held(api, name, holder)
        async with fenced_transaction(connection, *itertools.chain(*holdings.values())):
            renews = [
                asyncio.ensure_future(renew_all(api, names, holder))
                for holder, names in holdings.items()
            ]
            assert await lock_waits_settled(connection) == DEFAULT_LOCK_WAITS
            await acquired_within_a_second(api, "ops.report")
        answers = await asyncio.gather(*renews)
        for (holder, names), answer in zip(holdings.items(), answers, strict=True):
            assert answer["lost"] == []
            answered = [lease["name"] for lease in answer["renewed"]] + [
                ref["name"] for ref in answer["undecided"]
            ]
            assert sorted(answered) == sorted(names), holder


async def test_single_renews_of_locked_holdings_leave_the_pool_to_other_requests(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Thirty concurrent single renews of holdings a fenced transaction holds FOR SHARE: two
    statements wait on the rows, another principal's acquire on the same replica answers within
    1 s, and each renew is renewed or answered 503 (retry), never lost."""
    names = [f"billing.job-{i}" for i in range(30)]
    async with serving(database_url, headers=bearer("billing-client"), **PATIENT) as api:
        await acquired_within_a_second(api, "ops.warm-up")
        for name in names:
            await held(api, name, "worker")
        async with fenced_transaction(connection, *names):
            renews = [
                asyncio.ensure_future(
                    api.post(
                        f"/v1/leases/{name}/renew",
                        json={"holder": "worker", "generation": 1, "ttl_seconds": 30},
                    )
                )
                for name in names
            ]
            assert await lock_waits_settled(connection) == DEFAULT_LOCK_WAITS
            await acquired_within_a_second(api, "ops.report")
        answers = await asyncio.gather(*renews)
        assert {answer.status_code for answer in answers} <= {200, 503}
        for answer in answers:
            if answer.status_code == 503:
                problem(answer, 503, "storage-unavailable")


async def test_with_no_place_to_wait_a_locked_row_is_answered_at_once(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """TENURE_LOCK_WAIT_MAX_CONNECTIONS=0, a 30 s lock timeout: a renew of a row a fenced
    transaction holds is answered at once, undecided in a batch (the others renewed) and 503
    alone, and the row is renewed once the transaction has committed."""
    names = [f"job-{i}" for i in range(3)]
    single = {"holder": "worker", "generation": 1, "ttl_seconds": 30}
    async with serving(database_url, lock_timeout_ms=30_000, lock_wait_max_connections=0) as api:
        for name in names:
            await held(api, name, "worker")
        async with fenced_transaction(connection, "job-1"):
            started = time.monotonic()
            answer = await renew_all(api, names)
            problem(
                await api.post("/v1/leases/job-1/renew", json=single), 503, "storage-unavailable"
            )
            assert time.monotonic() - started < 10
        assert sorted(lease["name"] for lease in answer["renewed"]) == ["job-0", "job-2"]
        assert (answer["lost"], answer["undecided"]) == ([], [{"name": "job-1", "generation": 1}])
        assert (await api.post("/v1/leases/job-1/renew", json=single)).status_code == 200


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
