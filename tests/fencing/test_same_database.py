"""`fenced_transaction` on Tenure's own database: the write commits under the holding it checked
(FOR SHARE on the lease row, expiry by clock_timestamp()) or not at all, and a takeover waits
for it. Leases are taken through the real service; the checks run on its database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeAlias

import asyncpg
import pytest

from tenure import AsyncTenure, Lease, LeaseLost, SchemaTooOld
from tenure.pg import fenced_transaction
from tests.support import postgres
from tests.support.live_service import LiveService

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"
INSERT = "INSERT INTO commissions (generation) VALUES ($1)"


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[Pool]:
    async with asyncpg.create_pool(database_url, min_size=1, max_size=5) as created:
        await created.execute("CREATE TABLE commissions (generation bigint NOT NULL)")
        yield created


@pytest.fixture
async def tenure(service: LiveService) -> AsyncIterator[AsyncTenure]:
    async with AsyncTenure(service.url) as client:
        yield client


async def _written(pool: Pool) -> list[int]:
    return [row[0] for row in await pool.fetch("SELECT generation FROM commissions")]


async def _wait_expired(lease: Lease) -> None:
    await asyncio.sleep(lease.expires_in_seconds + 0.1)


async def test_the_current_holding_writes_and_commits(pool: Pool, tenure: AsyncTenure) -> None:
    """The holder, at its generation, before expiry: the block runs and its write commits."""
    lease = await tenure.acquire("close-day", 30)
    async with fenced_transaction(pool, lease.name, tenure.holder, lease.generation) as db:
        await db.execute(INSERT, lease.generation)
    assert await _written(pool) == [lease.generation]


async def test_anything_but_the_current_holding_is_refused_before_the_block(
    pool: Pool, tenure: AsyncTenure
) -> None:
    """Another holder, an older generation, or a released holding: LeaseLost, nothing
    written."""
    first = await tenure.acquire("close-day", 30)
    await tenure.release(first)
    second = await tenure.acquire("close-day", 30)
    refused = [
        ("close-day", "someone-else", second.generation),
        ("close-day", tenure.holder, first.generation),
        ("never-acquired", tenure.holder, 1),
    ]
    for lease, holder, generation in refused:
        with pytest.raises(LeaseLost):
            async with fenced_transaction(pool, lease, holder, generation) as db:
                await db.execute(INSERT, generation)
    await tenure.release(second)
    with pytest.raises(LeaseLost):
        async with fenced_transaction(pool, "close-day", tenure.holder, second.generation):
            pass
    assert await _written(pool) == []


async def test_expiry_is_judged_when_the_check_runs_not_when_the_transaction_began(
    pool: Pool, tenure: AsyncTenure
) -> None:
    """A release that commits while the check waits for the lease row ends the holding: the
    re-checked row is compared with clock_timestamp(). With now() — frozen when the transaction
    began, before the release — the released holding would still pass."""
    lease = await tenure.acquire("close-day", 30)
    async with pool.acquire() as releaser, releaser.transaction():
        await releaser.execute("SELECT 1 FROM leases WHERE name = $1 FOR UPDATE", lease.name)

        async def write() -> None:
            async with fenced_transaction(
                pool, lease.name, tenure.holder, lease.generation, lock_timeout=10
            ) as db:
                await db.execute(INSERT, lease.generation)

        writing = asyncio.create_task(write())
        await asyncio.sleep(0.2)  # the fenced transaction has begun and waits for the row
        assert not writing.done()
        await releaser.execute(
            "UPDATE leases SET expires_at = clock_timestamp(), released_at = clock_timestamp() "
            "WHERE name = $1",
            lease.name,
        )
    with pytest.raises(LeaseLost):
        await writing
    assert await _written(pool) == []


@pytest.mark.slow  # waits for a real 1 s TTL to run out
async def test_a_takeover_waits_for_the_open_fenced_transaction(
    pool: Pool, tenure: AsyncTenure, service: LiveService
) -> None:
    """While a fenced transaction is open, the next holder's acquire cannot commit, even after
    the lease expired: the fenced write commits first, then the takeover."""
    lease = await tenure.acquire("close-day", 1)
    async with AsyncTenure(service.url) as other:
        async with fenced_transaction(
            pool, lease.name, tenure.holder, lease.generation, idle_timeout=10
        ) as db:
            await _wait_expired(lease)
            takeover = asyncio.create_task(other.acquire("close-day", 30, wait=10))
            await asyncio.sleep(0.3)
            assert not takeover.done()
            await db.execute(INSERT, lease.generation)
            await asyncio.sleep(0.1)
            assert not takeover.done()  # still waiting after the write, until the commit
        taken = await takeover
    assert taken.generation == lease.generation + 1
    assert await _written(pool) == [lease.generation]


@pytest.mark.slow  # waits for a real 1 s TTL to run out
async def test_for_key_share_would_not_hold_a_takeover_back(
    pool: Pool, tenure: AsyncTenure, service: LiveService
) -> None:
    """Why FOR SHARE: with FOR KEY SHARE on the lease row, a takeover (an UPDATE that keeps the
    key, FOR NO KEY UPDATE) commits while the transaction that checked is still open."""
    lease = await tenure.acquire("close-day", 1)
    async with pool.acquire() as connection, connection.transaction():
        checked = await connection.fetchval(
            "SELECT 1 FROM leases WHERE name = $1 AND generation = $2 FOR KEY SHARE",
            lease.name,
            lease.generation,
        )
        assert checked == 1
        await _wait_expired(lease)
        async with AsyncTenure(service.url) as other:
            taken = await asyncio.wait_for(other.acquire("close-day", 30), timeout=5)
        assert taken.generation == lease.generation + 1  # committed under our "check"


async def test_timeouts_are_set_for_the_transaction_only(pool: Pool, tenure: AsyncTenure) -> None:
    """lock_timeout, statement_timeout and idle_in_transaction_session_timeout apply inside the
    block and are back to the session's values after it."""
    lease = await tenure.acquire("close-day", 30)
    names = ("lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout")
    query = "SELECT " + ", ".join(f"current_setting('{name}')" for name in names)
    async with pool.acquire() as connection:
        before = tuple(await connection.fetchrow(query) or ())
        async with fenced_transaction(
            connection,
            lease.name,
            tenure.holder,
            lease.generation,
            lock_timeout=1.5,
            statement_timeout=3,
            idle_timeout=4,
        ):
            inside = tuple(await connection.fetchrow(query) or ())
        after = tuple(await connection.fetchrow(query) or ())
    assert inside == ("1500ms", "3s", "4s")
    assert after == before


async def test_a_connection_already_in_a_transaction_is_refused(
    pool: Pool, tenure: AsyncTenure
) -> None:
    """The fence must be its own transaction: its lock and timeouts end with it."""
    lease = await tenure.acquire("close-day", 30)
    async with pool.acquire() as connection, connection.transaction():
        with pytest.raises(ValueError, match="not in a transaction"):
            async with fenced_transaction(connection, lease.name, tenure.holder, 1):
                pass


@pytest.mark.parametrize(
    "options", [{"lock_timeout": 0}, {"statement_timeout": -1}, {"idle_timeout": float("nan")}]
)
async def test_bad_timeouts_are_refused(pool: Pool, options: dict[str, float]) -> None:
    """Timeouts are positive seconds or None; anything else is a ValueError, before any SQL."""
    with pytest.raises(ValueError, match="timeout"):
        async with fenced_transaction(pool, "close-day", "me", 1, **options):
            pass


@pytest.fixture
async def version_13_url(server_url: str) -> AsyncIterator[str]:
    """Tenure's database migrated up to 0013 only: older than the rules `check_lease` calls."""
    name = postgres.unique_name("tenure_v13")
    yield await postgres.create_database_at(server_url, name, 13)
    await postgres.drop_database(server_url, name)


async def test_a_database_older_than_the_rules_is_named_in_one_line(version_13_url: str) -> None:
    """Before migration 0014 (tenure_holds_v1), the check says the schema is too old and how to
    fix it, in one line, instead of asyncpg's undefined_function; nothing is written."""
    connection = await asyncpg.connect(version_13_url)
    try:
        with pytest.raises(SchemaTooOld) as raised:
            async with fenced_transaction(connection, "close-day", "a", 1):
                pass
        assert not connection.is_in_transaction()
    finally:
        await connection.close()
    message = str(raised.value)
    assert "\n" not in message
    assert "0014" in message
    assert "tenure_holds_v1" in message
    assert "tenure migrate" in message
