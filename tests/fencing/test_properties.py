"""Property: under many concurrent requests with random generations, against each store, the
writes the handler commits are in non-decreasing generation order, and no request whose
generation is below an already-committed one ever reaches the handler (through the service,
none below its lease's current generation)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypeAlias

import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenure import AsyncTenure
from tenure._fencing import FenceStore, MemoryFenceStore, RemoteFenceStore, accepted_token
from tenure._middleware import ASGIApp, FencingMiddleware, Receive, Scope, Send
from tenure.pg import PostgresFenceStore
from tests.support.live_service import LiveService

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
GENERATIONS = 6  # the remote test hands out this many generations of its lease first
LEASE = "close-day"

# (generation, replica, pauses inside the handler) for each concurrent request.
Requests = list[tuple[int, int, int]]
requests_strategy = st.lists(
    st.tuples(st.integers(1, GENERATIONS), st.integers(0, 2), st.integers(0, 3)),
    min_size=1,
    max_size=24,
)


# Shared fixtures are fine: every example fences a resource of its own.
def examples(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


@dataclass
class Ledger:
    """What the handler saw: (generation, highest committed at that moment) when it was
    reached, and the generations it committed, in commit order."""

    reached: list[tuple[int, int]] = field(default_factory=list)
    committed: list[int] = field(default_factory=list)

    def check(self, requests: Requests, statuses: list[int], current: int | None = None) -> None:
        """`current`: the lease's current generation, for a store that asks the service, which
        accepts that generation alone on every resource."""
        assert self.committed == sorted(self.committed)
        assert all(generation >= highest for generation, highest in self.reached)
        assert statuses.count(201) == len(self.committed)
        assert set(statuses) <= {201, 409}
        if current is not None:
            assert [status == 201 for status in statuses] == [
                generation == current for generation, _, _ in requests
            ]
            return
        assert len(self.committed) >= 1  # the highest generation sent always gets through
        assert self.committed[-1] == max(generation for generation, _, _ in requests)


async def _pause(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def _pauses(scope: Scope) -> int:
    return next((int(v) for k, v in scope["headers"] if k == b"x-pauses"), 0)


async def _created(send: Send) -> None:
    await send({"type": "http.response.start", "status": 201, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def memory_app(ledger: Ledger) -> ASGIApp:
    """The handler keeps its writes in memory."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        token = accepted_token()
        assert token is not None
        ledger.reached.append((token.generation, max(ledger.committed, default=0)))
        await _pause(_pauses(scope))
        ledger.committed.append(token.generation)
        await _created(send)

    return app


async def send_all(replicas: list[ASGIApp], resource: str, requests: Requests) -> list[int]:
    """Send every request at once, each to its replica; the statuses in request order."""

    async def one(generation: int, replica: int, pauses: int) -> int:
        transport = httpx.ASGITransport(app=replicas[replica % len(replicas)])
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.post(
                f"/{resource}",
                headers={"Fencing-Token": f"{LEASE}/{generation}", "X-Pauses": str(pauses)},
            )
        return response.status_code

    return list(await asyncio.gather(*(one(*request) for request in requests)))


def fenced(app: ASGIApp, store: FenceStore) -> ASGIApp:
    return FencingMiddleware(app, store=store)


@examples(60)
@given(requests=requests_strategy)
async def test_memory_store(requests: Requests) -> None:
    """The memory store, one process."""
    ledger = Ledger()
    app = fenced(memory_app(ledger), MemoryFenceStore())
    ledger.check(requests, await send_all([app], "r", requests))


@pytest.fixture
async def fences(own_pool: Pool) -> Pool:
    await PostgresFenceStore(own_pool).ensure_schema()
    await own_pool.execute(
        "CREATE TABLE writes (resource text, generation bigint, seq bigint);"
        "CREATE SEQUENCE write_order"
    )
    return own_pool


def postgres_replica(pool: Pool, ledger: Ledger) -> ASGIApp:
    """One replica: its own store (its own locks); the handler writes in the fence's
    transaction. nextval runs under the fence row's lock, so `seq` is the commit order."""
    store = PostgresFenceStore(pool, lock_timeout=10)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        token = accepted_token()
        assert token is not None
        # Between the middleware's check and the handler's: where another replica can commit
        # a higher generation first, which the transaction's own check must then refuse.
        await asyncio.sleep(_pauses(scope) * 0.003)
        async with store.transaction(token.resource, token.lease, token.generation) as db:
            highest = await db.fetchval(
                "SELECT coalesce(max(generation), 0) FROM writes WHERE resource = $1",
                token.resource,
            )
            ledger.reached.append((token.generation, highest))
            await _pause(_pauses(scope))
            await db.execute(
                "INSERT INTO writes VALUES ($1, $2, nextval('write_order'))",
                token.resource,
                token.generation,
            )
        await _created(send)

    return fenced(app, store)


async def _committed(pool: Pool, resource: str) -> list[int]:
    rows = await pool.fetch(
        "SELECT generation FROM writes WHERE resource = $1 ORDER BY seq", resource
    )
    return [row[0] for row in rows]


@examples(15)
@given(requests=requests_strategy)
async def test_postgres_store_across_replicas(fences: Pool, requests: Requests) -> None:
    """The postgres store with the write in its transaction, three replicas (each its own
    store and locks) on one database: the order holds across replicas."""
    ledger = Ledger()
    replicas = [postgres_replica(fences, ledger) for _ in range(3)]
    resource = secrets.token_hex(8)
    statuses = await send_all(replicas, resource, requests)
    ledger.committed = await _committed(fences, "/" + resource)
    ledger.check(requests, statuses)


@examples(15)
@given(requests=requests_strategy)
async def test_postgres_store_middleware_form_in_one_process(
    fences: Pool, requests: Requests
) -> None:
    """The postgres store checked by the middleware alone (its own transaction), the write on
    another connection afterwards: exact within one process."""
    ledger = Ledger()
    app = fenced(memory_app(ledger), PostgresFenceStore(fences))
    ledger.check(requests, await send_all([app], secrets.token_hex(8), requests))


@pytest.fixture
async def tenure(service: LiveService) -> AsyncIterator[AsyncTenure]:
    """A client of the real service whose lease has handed out GENERATIONS generations."""
    async with AsyncTenure(service.url) as client:
        for _ in range(GENERATIONS):
            await client.release(await client.acquire(LEASE, 30))
        yield client


@examples(10)
@given(requests=requests_strategy)
async def test_remote_store(tenure: AsyncTenure, requests: Requests) -> None:
    """The remote store (the real Tenure service over HTTP), one process: only the lease's
    current generation gets through, every time it is sent."""
    ledger = Ledger()
    app = fenced(memory_app(ledger), RemoteFenceStore(tenure))
    statuses = await send_all([app], secrets.token_hex(8), requests)
    ledger.check(requests, statuses, current=GENERATIONS)
