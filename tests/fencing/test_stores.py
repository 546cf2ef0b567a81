"""Each fence store gives the guarantee its docstring states: the memory store in one process,
the postgres store in the protected service's own database (check and write in one
transaction), the remote store in the real Tenure service."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TypeAlias

import asyncpg
import httpx
import pytest

from tenure import MAX_GENERATION, AsyncTenure
from tenure._fencing import (
    FencedByAnotherLease,
    FencedRequest,
    FenceStoreUnavailable,
    FencingTokenMalformed,
    FencingTokenMissing,
    MemoryFenceStore,
    RemoteFenceStore,
    ResourceLocks,
    StaleFencingToken,
    UnknownFencingGeneration,
    check_token,
    fenced,
    tenure_resource_name,
)
from tenure._middleware import FencingMiddleware, Receive, Scope, Send
from tenure._retry import NO_RETRY
from tenure.pg import QUERIES, PostgresFenceStore
from tenure.sql import parse
from tests.support.live_service import LiveService

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
PG_MODULE = Path(__file__).resolve().parents[2] / "client" / "tenure" / "pg.py"


# Memory -------------------------------------------------------------------------------------


async def test_check_token_accepts_equal_or_higher_generations_and_refuses_lower() -> None:
    """`check_token` returns the accepted generation, raises StaleFencingToken(highest) below
    the highest, and refuses missing and malformed tokens with their own errors."""
    store = MemoryFenceStore()
    assert await check_token(store, "ledger", "job/3") == 3
    assert await check_token(store, "ledger", "job/3") == 3
    assert await check_token(store, "ledger", "job/5") == 5
    with pytest.raises(StaleFencingToken) as stale:
        await check_token(store, "ledger", "job/4")
    assert stale.value.highest == 5
    with pytest.raises(FencingTokenMissing):
        await check_token(store, "ledger", None)
    with pytest.raises(FencingTokenMalformed):
        await check_token(store, "ledger", "job/05")
    with pytest.raises(FencedByAnotherLease) as other:
        await check_token(store, "ledger", "other/9")
    assert other.value.lease == "job"
    assert store.highest("ledger") == 5


async def test_fenced_keeps_the_process_out_of_the_resource_until_the_block_ends() -> None:
    """Inside `fenced`, a second user of the resource waits; when the block with generation 8
    ends, the waiting generation 7 is refused — it never writes after 8."""
    store = MemoryFenceStore()
    inside = asyncio.Event()
    finish = asyncio.Event()
    writes: list[int] = []

    async def write(token: str) -> None:
        async with fenced(store, "ledger", token) as request:
            inside.set()
            await finish.wait()
            writes.append(request.generation)

    first = asyncio.create_task(write("job/8"))
    await inside.wait()
    second = asyncio.create_task(write("job/7"))
    await asyncio.sleep(0.01)
    assert not second.done()
    finish.set()
    await first
    with pytest.raises(StaleFencingToken):
        await second
    assert writes == [8]


async def test_resource_locks_are_dropped_when_nobody_holds_them() -> None:
    """The per-resource locks do not accumulate one entry per key ever seen."""
    locks = ResourceLocks()
    async with locks.hold("a"), locks.hold("b"):
        assert len(locks) == 2
    assert len(locks) == 0


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("payments", "payments"),
        ("/payments/42", "payments:42"),
        ("payments:eu/7", "payments:eu:7"),
    ],
)
def test_resource_keys_map_to_tenure_names(key: str, name: str) -> None:
    """Keys that are not Tenure names become names: slashes turn into colons."""
    assert tenure_resource_name(key) == name


def test_keys_that_cannot_be_names_are_hashed() -> None:
    """Keys with characters Tenure names do not allow get a stable `sha256:` name."""
    name = tenure_resource_name("/pagamentos/ação")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", name)
    assert name == tenure_resource_name("/pagamentos/ação")
    assert tenure_resource_name("/") != tenure_resource_name("")


# PostgreSQL (the protected service's own database) -----------------------------------------


@pytest.fixture
async def store(own_pool: Pool) -> PostgresFenceStore:
    fences = PostgresFenceStore(own_pool, lock_timeout=5)
    await fences.ensure_schema()
    await own_pool.execute(
        "CREATE TABLE ledger (id bigint GENERATED ALWAYS AS IDENTITY, generation bigint)"
    )
    return fences


async def _ledger(pool: Pool) -> list[int]:
    return [row[0] for row in await pool.fetch("SELECT generation FROM ledger ORDER BY id")]


async def test_ensure_schema_can_run_from_many_replicas_at_once(own_pool: Pool) -> None:
    """Concurrent and repeated `ensure_schema` calls all succeed and make one table."""
    stores = [PostgresFenceStore(own_pool) for _ in range(5)]
    await asyncio.gather(*(each.ensure_schema() for each in stores))
    await stores[0].ensure_schema()
    assert await own_pool.fetchval("SELECT count(*) FROM tenure_fences") == 0


async def test_a_write_in_the_fence_transaction_commits_with_the_fence(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """The yielded connection is in the transaction that checked the token: its write and the
    advanced fence commit together."""
    async with store.transaction("ledger", "job", 3) as connection:
        await connection.execute("INSERT INTO ledger (generation) VALUES (3)")
    row = await own_pool.fetchrow("SELECT lease, highest_generation FROM tenure_fences")
    assert row is not None
    assert tuple(row) == ("job", 3)
    assert await _ledger(own_pool) == [3]


async def test_a_stale_generation_is_refused_before_the_block_and_writes_nothing(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """Below the highest, `transaction` raises StaleFencingToken(highest) before the block."""
    await store.advance("ledger", "job", 5)
    with pytest.raises(StaleFencingToken) as stale:
        async with store.transaction("ledger", "job", 4) as connection:
            await connection.execute("INSERT INTO ledger (generation) VALUES (4)")
    assert stale.value.highest == 5
    with pytest.raises(FencedByAnotherLease):
        await store.advance("ledger", "other", 9)
    assert await _ledger(own_pool) == []


async def test_a_block_that_fails_rolls_back_its_write_and_the_fence(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """When the handler raises, neither its write nor the advanced fence is committed."""
    await store.advance("ledger", "job", 2)

    async def failing_handler() -> None:
        async with store.transaction("ledger", "job", 6) as connection:
            await connection.execute("INSERT INTO ledger (generation) VALUES (6)")
            raise RuntimeError("the handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        await failing_handler()
    assert await own_pool.fetchval("SELECT highest_generation FROM tenure_fences") == 2
    assert await _ledger(own_pool) == []


async def test_an_open_fence_transaction_makes_other_connections_wait_then_decide(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """While generation 8's transaction is open, other replicas' checks wait on the fence row;
    after it commits, 7 is refused and 9 passes: writes commit in generation order."""
    other_replica = PostgresFenceStore(own_pool, lock_timeout=5)
    inside, finish = asyncio.Event(), asyncio.Event()

    async def write(fences: PostgresFenceStore, generation: int) -> None:
        async with fences.transaction("ledger", "job", generation) as connection:
            inside.set()
            if generation == 8:
                await finish.wait()
            await connection.execute("INSERT INTO ledger (generation) VALUES ($1)", generation)

    eight = asyncio.create_task(write(store, 8))
    await inside.wait()
    seven = asyncio.create_task(write(other_replica, 7))
    nine = asyncio.create_task(write(other_replica, 9))
    await asyncio.sleep(0.2)
    assert not seven.done()
    assert not nine.done()
    finish.set()
    results = await asyncio.gather(eight, seven, nine, return_exceptions=True)
    assert isinstance(results[1], StaleFencingToken)
    assert results[0] is None
    assert results[2] is None
    assert await _ledger(own_pool) == [8, 9]


async def test_a_fence_row_locked_past_the_lock_timeout_is_unavailable_not_accepted(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """A check that cannot get the fence row within lock_timeout fails closed:
    FenceStoreUnavailable, nothing written."""
    impatient = PostgresFenceStore(own_pool, lock_timeout=0.1)
    inside, finish = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with store.transaction("ledger", "job", 1):
            inside.set()
            await finish.wait()

    holding = asyncio.create_task(hold())
    await inside.wait()
    try:
        with pytest.raises(FenceStoreUnavailable):
            await impatient.advance("ledger", "job", 2)
    finally:
        finish.set()
        await holding
    assert await own_pool.fetchval("SELECT highest_generation FROM tenure_fences") == 1


async def test_the_dependency_uses_the_token_accepted_for_the_request(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """`store.connection()` opens the fence transaction for the accepted token, and refuses
    (FencingTokenMissing) when no token was accepted."""
    with pytest.raises(FencingTokenMissing):
        await anext(store.connection())
    async with fenced(MemoryFenceStore(), "ledger", "job/4"):
        dependency = store.connection()
        connection = await anext(dependency)
        await connection.execute("INSERT INTO ledger (generation) VALUES (4)")
        with pytest.raises(StopAsyncIteration):
            await anext(dependency)
    assert await _ledger(own_pool) == [4]


async def test_the_dependency_refuses_what_another_replica_fenced_after_the_middleware(
    store: PostgresFenceStore, own_pool: Pool
) -> None:
    """The middleware's own check is not atomic with the write across replicas, the dependency
    is: when another replica advances the fence between the two, the handler's transaction
    refuses, the write never happens, and the client gets 409."""
    other_replica = PostgresFenceStore(own_pool)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await other_replica.advance("/ledger", "job", 8)  # lands between check and write
        async for connection in store.connection():
            await connection.execute("INSERT INTO ledger (generation) VALUES (7)")
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    middleware = FencingMiddleware(app, store=store)
    transport = httpx.ASGITransport(app=middleware)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.post("/ledger", headers={"Fencing-Token": "job/7"})
    assert (response.status_code, response.json()["highest"]) == (409, 8)
    assert await _ledger(own_pool) == []


def test_every_statement_of_fences_sql_is_used_and_every_used_one_exists() -> None:
    """The names in fences.sql and the names tenure.pg runs are the same set."""
    used = set(re.findall(r'QUERIES\["([a-z_]+)"\]', PG_MODULE.read_text("utf-8")))
    assert used == set(QUERIES)
    with pytest.raises(ValueError, match="twice"):
        parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


# Remote (the Tenure service) ----------------------------------------------------------------


async def test_a_forged_generation_cannot_lock_the_resource(service: LiveService) -> None:
    """A generation above the lease's current one is refused by Tenure (422
    unknown-generation, answered as such by the middleware), so the real holder still passes."""
    async with AsyncTenure(service.url) as tenure:
        lease = await tenure.acquire("close-day", 30)
        store = RemoteFenceStore(tenure)
        with pytest.raises(UnknownFencingGeneration) as forged:
            await store.advance("/payments", "close-day", lease.generation + 1000)
        assert forged.value.current_generation == lease.generation
        calls: list[FencedRequest] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            calls.append(FencedRequest("", "", 0))
            await send({"type": "http.response.start", "status": 201, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        transport = httpx.ASGITransport(app=FencingMiddleware(app, store=store))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            forged_response = await http.post(
                "/payments", headers={"Fencing-Token": f"close-day/{MAX_GENERATION}"}
            )
            real = await http.post(
                "/payments", headers={"Fencing-Token": f"close-day/{lease.generation}"}
            )
    assert forged_response.status_code == 422
    body = forged_response.json()
    assert body["type"] == "/problems/unknown-generation"
    assert body["current_generation"] == lease.generation
    assert real.status_code == 201
    assert len(calls) == 1


async def test_the_remote_store_refuses_stale_generations_and_other_leases(
    service: LiveService,
) -> None:
    """Tenure's stale-generation and fence-lease-mismatch answers become the store's errors."""
    async with AsyncTenure(service.url) as tenure:
        first = await tenure.acquire("close-day", 30)
        await tenure.release(first)
        second = await tenure.acquire("close-day", 30)
        other = await tenure.acquire("other", 30)
        store = RemoteFenceStore(tenure)
        assert await store.advance("/payments/1", "close-day", second.generation) == 2
        with pytest.raises(StaleFencingToken) as stale:
            await store.advance("/payments/1", "close-day", first.generation)
        assert stale.value.highest == second.generation
        with pytest.raises(FencedByAnotherLease):
            await store.advance("/payments/1", "other", other.generation)
        fence = await tenure.verify_fence("payments:1", second)
        assert fence.highest == second.generation


async def test_an_unreachable_tenure_fails_closed(dead_url: str) -> None:
    """When Tenure cannot be asked, the remote store refuses with FenceStoreUnavailable."""
    async with AsyncTenure(dead_url, retry=NO_RETRY) as tenure:
        with pytest.raises(FenceStoreUnavailable):
            await RemoteFenceStore(tenure).advance("/payments", "close-day", 1)
