"""The service's pool: the session settings its statements rely on, a reset on release that
keeps them while still ending whatever transaction a caller left open, and a transaction left
idle (its process frozen) ended by the database."""

from __future__ import annotations

import asyncio
import time

import asyncpg

from tenure_server.db.pool import create_pool


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
