"""The service's pool: the session settings its statements rely on, a reset on release that
keeps them while still ending whatever transaction a caller left open, a transaction left
idle (its process frozen) ended by the database, and the connections kept at hand between
statements: only those that ended cleanly, never one the server ended, at most `min_size`."""

from __future__ import annotations

import asyncio
import random
import time

import asyncpg

from tenure_server.db.connections import Connections, Pool
from tenure_server.db.pool import create_pool


async def _backend(connections: Connections) -> int:
    async with connections.connection() as connection:
        pid: int = await connection.fetchval("SELECT pg_backend_pid()")
    return pid


async def _sleeping(connections: Connections, seconds: float) -> None:
    """A statement that runs `seconds` on one of `connections`."""
    async with connections.connection() as connection:
        await connection.execute("SELECT pg_sleep($1)", seconds)


async def _pool(database_url: str, min_size: int = 2, max_size: int = 4) -> Pool:
    return await create_pool(
        database_url,
        min_size=min_size,
        max_size=max_size,
        statement_timeout_ms=4000,
        lock_timeout_ms=3000,
    )


async def test_a_connection_whose_statement_ended_cleanly_serves_the_next_and_counts_idle(
    database_url: str,
) -> None:
    """Statements one after another run on one connection, kept out of asyncpg's pool between
    them; after statements at once, at most min_size are kept, and every connection not running
    a statement counts as idle."""
    pool = await _pool(database_url)
    connections = Connections(pool, acquire_timeout=5)
    try:
        first = await _backend(connections)
        assert [await _backend(connections) for _ in range(5)] == [first] * 5
        assert pool.get_idle_size() == pool.get_size()

        await asyncio.gather(*(_sleeping(connections, 0.2) for _ in range(4)))
        assert pool.get_size() == 4
        assert pool.get_idle_size() == 4
        assert pool.asyncpg.get_idle_size() == 2  # two kept, two back in asyncpg's pool
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_a_statement_waiting_in_the_pool_gets_the_next_connection_given_back(
    database_url: str,
) -> None:
    """With every connection in use (here the only one), a statement waits in asyncpg's pool;
    the connection whose statement ends next goes to it, not to the kept ones, where only a
    later statement would find it while this one waited out its timeout."""
    pool = await _pool(database_url, min_size=1, max_size=1)
    connections = Connections(pool, acquire_timeout=3)
    try:
        running = asyncio.create_task(_sleeping(connections, 0.3))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        assert await _backend(connections) > 0
        assert time.monotonic() - started < 1.5
        await running
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_a_connection_left_in_a_transaction_goes_back_to_the_pool_and_is_rolled_back(
    database_url: str,
) -> None:
    """A caller that leaves a transaction open does not leave it to the next statement: the
    connection goes back to the pool, which rolls it back (its SET LOCAL undone)."""
    pool = await _pool(database_url, min_size=1, max_size=1)
    connections = Connections(pool, acquire_timeout=5)
    try:
        async with connections.connection() as connection:
            await connection.execute("BEGIN")
            await connection.execute("SET LOCAL statement_timeout = 1")
        async with connections.connection() as connection:
            assert not connection.is_in_transaction()
            assert await connection.fetchval("SHOW statement_timeout") == "4s"
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_a_kept_connection_the_server_ended_is_not_handed_out(database_url: str) -> None:
    """A kept connection whose backend was terminated (a database restart, an administrator)
    is dropped when next taken: the statement runs on a new connection instead of failing."""
    pool = await _pool(database_url, min_size=1, max_size=2)
    connections = Connections(pool, acquire_timeout=5)
    other = await asyncpg.connect(database_url)
    try:
        ended = await _backend(connections)
        assert await other.fetchval("SELECT pg_terminate_backend($1)", ended)
        await asyncio.sleep(0.3)  # the socket's close reaches the client
        replaced = await _backend(connections)
        assert replaced != ended
        assert await _backend(connections) == replaced
    finally:
        await other.close()
        await asyncio.wait_for(pool.close(), 10)


async def test_a_cancelled_statement_leaves_nothing_running_for_the_next(database_url: str) -> None:
    """A statement cancelled mid-way (its caller gone) is not kept: the pool waits out the
    cancellation, so the next statement neither waits for the old one nor gets its answer."""
    pool = await _pool(database_url, min_size=1, max_size=1)
    connections = Connections(pool, acquire_timeout=5)
    try:
        task = asyncio.create_task(_sleeping(connections, 5))
        await asyncio.sleep(0.3)
        task.cancel()
        started = time.monotonic()
        async with connections.connection() as connection:
            assert await connection.fetchval("SELECT 41 + 1") == 42
        assert time.monotonic() - started < 2
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_statements_racing_with_errors_and_cancellations_leave_the_pool_whole(
    database_url: str,
) -> None:
    """Sixty statements at once on a pool of three, some failing, some leaving a transaction
    open, some cancelled mid-way: afterwards every connection is idle, as many statements as
    the pool holds run at once without waiting, and connections are kept again after them."""
    pool = await _pool(database_url, min_size=2, max_size=3)
    connections = Connections(pool, acquire_timeout=5)
    rng = random.Random(7)

    async def one(kind: int) -> None:
        async with connections.connection() as connection:
            if kind == 0:
                await connection.execute("SELECT 1 / 0")
            elif kind == 1:
                await connection.execute("BEGIN")
            await connection.execute(f"SELECT pg_sleep({rng.uniform(0, 0.03):.3f})")

    try:
        tasks = [asyncio.create_task(one(index % 4)) for index in range(60)]
        await asyncio.sleep(0.05)
        for task in tasks[3::8]:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        assert {type(outcome) for outcome in outcomes} <= {
            type(None),
            asyncpg.DivisionByZeroError,
            asyncio.CancelledError,
        }
        assert pool.get_idle_size() == pool.get_size()

        started = time.monotonic()
        await asyncio.gather(*(_sleeping(connections, 0.2) for _ in range(3)))
        assert time.monotonic() - started < 1.5
        assert pool.asyncpg.get_idle_size() == pool.get_size() - 2  # two kept again
    finally:
        await asyncio.wait_for(pool.close(), 10)


async def test_pooled_connections_keep_their_settings_and_lose_open_transactions(
    database_url: str,
) -> None:
    """A connection returned inside a transaction comes back out of it (its SET LOCAL undone),
    and READ COMMITTED, the timeouts and jit=off survive the release (no RESET ALL per
    request)."""
    pool = await create_pool(
        database_url, min_size=1, max_size=1, statement_timeout_ms=4000, lock_timeout_ms=3000
    )
    try:
        async with pool.acquire() as connection:
            await connection.execute("BEGIN")
            await connection.execute("SET LOCAL statement_timeout = 1")
        async with pool.acquire() as connection:
            settings = await connection.fetchrow(
                "SELECT current_setting('transaction_isolation') AS isolation,"
                " current_setting('statement_timeout') AS statement_timeout,"
                " current_setting('lock_timeout') AS lock_timeout, current_setting('jit') AS jit,"
                " current_setting('idle_in_transaction_session_timeout') AS idle_in_transaction"
            )
            in_transaction = connection.is_in_transaction()
    finally:
        await pool.close()
    assert settings is not None
    assert dict(settings) == {
        "isolation": "read committed",
        "statement_timeout": "4s",
        "lock_timeout": "3s",
        "jit": "off",
        "idle_in_transaction": "4s",
    }
    assert not in_transaction


async def test_a_transaction_left_idle_gives_its_row_locks_up_after_the_statement_timeout(
    database_url: str,
) -> None:
    """A pooled connection whose process stops between two statements of a transaction (a
    hand-off: its release, then the waiter's acquire) holds the row it wrote; the database ends
    that session after statement_timeout, so another writer of the row waits no longer than
    that, and the release is undone."""
    pool = await create_pool(
        database_url, min_size=1, max_size=1, statement_timeout_ms=1000, lock_timeout_ms=3000
    )
    other = await asyncpg.connect(database_url)
    try:
        await other.execute("CREATE TABLE held (id int PRIMARY KEY, v int)")
        await other.execute("INSERT INTO held VALUES (1, 0)")
        async with pool.acquire() as frozen:
            await frozen.execute("BEGIN")
            await frozen.execute("UPDATE held SET v = 1 WHERE id = 1")
            started = time.monotonic()
            await other.execute("SET lock_timeout = '5s'")
            await other.execute("UPDATE held SET v = 2 WHERE id = 1")
            waited = time.monotonic() - started
            with_error = None
            try:
                await frozen.execute("COMMIT")
            except (
                asyncpg.PostgresError,
                asyncpg.InterfaceError,
                asyncpg.InternalClientError,
            ) as error:
                with_error = error
        assert 0.8 < waited < 4.0
        assert with_error is not None
        assert await other.fetchval("SELECT v FROM held WHERE id = 1") == 2
        async with pool.acquire() as replaced:  # the pool replaced the ended connection
            assert await replaced.fetchval("SELECT 1") == 1
    finally:
        await other.close()
        await asyncio.wait_for(pool.close(), 10)
