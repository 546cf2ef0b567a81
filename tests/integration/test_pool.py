"""The service's pool: the session settings its statements rely on, and a reset on release that
keeps them while still ending whatever transaction a caller left open."""

from __future__ import annotations

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
                " current_setting('lock_timeout') AS lock_timeout, current_setting('jit') AS jit"
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
    }
    assert not in_transaction
