"""The migration runner meets locked tables and statements that cannot run in a transaction: a
migration queued behind a fenced transaction gives up its place in the lock queue at once and
tries again, so acquires never wait behind it; a no-transaction migration runs each statement on
its own and is recorded only once all of them succeeded."""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg
import httpx
import pytest

from tenure.commands import EXIT_MIGRATION_LOCKED
from tenure_server.db.migrate import LockPatience, Migration, MigrationLocked, available, migrate
from tests.api.test_leases import held
from tests.integration.test_lock_waits import fenced_transaction
from tests.support import postgres
from tests.support.processes import TENURE, without_tenure_settings

# Stands for the next migration that alters the leases table: it needs an ACCESS EXCLUSIVE lock,
# however quick it is once it holds it.
ALTER_LEASES = Migration(9990, "probe_column", "ALTER TABLE leases ADD COLUMN probe_note text;")
CONCURRENT_INDEX = Migration(
    9991,
    "probe_index",
    "-- tenure: no-transaction\n"
    "-- A build that failed half-way left an invalid index: dropped before it is built again.\n"
    "DROP INDEX CONCURRENTLY IF EXISTS leases_probe_holder;\n"
    "CREATE INDEX CONCURRENTLY leases_probe_holder\n    ON leases (holder);\n",
)


async def longest_acquire_wait(api: httpx.AsyncClient, until: asyncio.Future[None]) -> float:
    """Acquire fresh names one after another until `until` is done; the longest answer time."""
    longest = 0.0
    count = 0
    while not until.done():
        count += 1
        started = time.monotonic()
        await held(api, f"probe-{count}", "h", ttl=30)
        longest = max(longest, time.monotonic() - started)
    return longest


async def recorded(connection: asyncpg.Connection[asyncpg.Record]) -> set[int]:
    return {
        row["version"] for row in await connection.fetch("SELECT version FROM tenure_migrations")
    }


async def test_a_migration_behind_a_fenced_transaction_retries_and_acquires_never_wait_on_it(
    database_url: str,
    connection: asyncpg.Connection[asyncpg.Record],
    api: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lease row held FOR SHARE for 3 s: the ALTER TABLE leases behind it times out after
    200 ms, is tried again until the row is let go, and is recorded once; meanwhile acquires of
    other names answer within a second (without the lock timeout they would wait the whole 3 s
    behind the queued ALTER)."""
    await held(api, "close-day", "a")
    caplog.set_level(logging.WARNING, "tenure.migrate")
    async with fenced_transaction(connection, "close-day"):
        migrating = asyncio.ensure_future(
            migrate(database_url, 10, LockPatience(200, 50), [*available(), ALTER_LEASES])
        )
        holding = asyncio.ensure_future(asyncio.sleep(3))
        longest = await longest_acquire_wait(api, holding)
        assert not migrating.done()
    assert await migrating == [ALTER_LEASES.version]
    assert longest < 1.0, f"an acquire waited {longest:.2f} s behind the migration"
    assert "waited 200 ms for a lock" in caplog.text
    assert ALTER_LEASES.version in await recorded(connection)


async def test_a_migration_whose_locks_stay_taken_fails_and_is_not_recorded(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record], api: httpx.AsyncClient
) -> None:
    """Every try timed out: MigrationLocked names the migration, nothing of it is applied."""
    await held(api, "close-day", "a")
    async with fenced_transaction(connection, "close-day"):
        with pytest.raises(MigrationLocked, match="9990_probe_column waited 2 times 100 ms"):
            await migrate(database_url, 10, LockPatience(100, 2), [*available(), ALTER_LEASES])
    assert ALTER_LEASES.version not in await recorded(connection)
    columns = await connection.fetchval(
        "SELECT count(*) FROM information_schema.columns WHERE column_name = 'probe_note'"
    )
    assert columns == 0


async def test_a_no_transaction_migration_builds_its_index_concurrently(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """CREATE INDEX CONCURRENTLY, refused inside any transaction, runs; the index is valid and
    the version recorded."""
    assert not CONCURRENT_INDEX.transactional
    assert await migrate(database_url, migrations=[*available(), CONCURRENT_INDEX]) == [9991]
    valid = await connection.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = 'leases_probe_holder'::regclass"
    )
    assert valid is True
    assert CONCURRENT_INDEX.version in await recorded(connection)


async def test_a_no_transaction_migration_that_failed_half_way_is_run_again_whole(
    database_url: str, connection: asyncpg.Connection[asyncpg.Record], api: httpx.AsyncClient
) -> None:
    """The build fails after the index was created invalid: the version is not recorded, and the
    next run drops the invalid index and builds it again."""
    await held(api, "close-day", "not-a-number")
    failing = Migration(
        9991,
        "probe_index",
        CONCURRENT_INDEX.sql.replace("ON leases (holder)", "ON leases ((holder::int))"),
    )
    with pytest.raises(asyncpg.InvalidTextRepresentationError):
        await migrate(database_url, migrations=[*available(), failing])
    assert failing.version not in await recorded(connection)
    assert (
        await connection.fetchval(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'leases_probe_holder'::regclass"
        )
        is False
    )
    assert await migrate(database_url, migrations=[*available(), CONCURRENT_INDEX]) == [9991]
    valid = await connection.fetchval(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = 'leases_probe_holder'::regclass"
    )
    assert valid is True


async def test_tenure_migrate_says_in_one_line_which_migration_found_its_table_locked(
    server_url: str,
) -> None:
    """A transaction reads the generation floor that migration 0009 alters: `tenure migrate`
    tries twice, then exits 75 with one line naming 0009 and the settings, not a traceback."""
    name = postgres.unique_name("tenure_v8")
    url = await postgres.create_database_at(server_url, name, 8)
    holder = await asyncpg.connect(url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT generation FROM tenure_generation_floor")
            env = without_tenure_settings() | {
                "TENURE_DATABASE_URL": url,
                "TENURE_MIGRATION_LOCK_TIMEOUT_MS": "100",
                "TENURE_MIGRATION_LOCK_ATTEMPTS": "2",
            }
            process = await asyncio.create_subprocess_exec(
                str(TENURE), "migrate", env=env, stderr=asyncio.subprocess.PIPE
            )
            _, stderr = await process.communicate()
    finally:
        await holder.close()
        await postgres.drop_database(server_url, name)
    assert process.returncode == EXIT_MIGRATION_LOCKED
    lines = [line for line in stderr.decode().splitlines() if line.startswith("tenure migrate:")]
    assert len(lines) == 1, stderr.decode()
    assert "0009_generation_bound waited 2 times 100 ms" in lines[0]
    assert "Traceback" not in stderr.decode()


def test_a_no_transaction_migration_is_split_at_the_ends_of_its_statements() -> None:
    """Comments stay with the statement they precede; a statement may span lines."""
    assert CONCURRENT_INDEX.statements() == [
        "-- tenure: no-transaction\n"
        "-- A build that failed half-way left an invalid index: dropped before it is built again.\n"
        "DROP INDEX CONCURRENTLY IF EXISTS leases_probe_holder;",
        "CREATE INDEX CONCURRENTLY leases_probe_holder\n    ON leases (holder);",
    ]
    # The shipped ones: 0013 and 0017 build their indexes CONCURRENTLY.
    assert [m.version for m in available() if not m.transactional] == [13, 17]


async def test_runners_started_together_pass_a_concurrent_index_build(server_url: str) -> None:
    """Three runners at once on a fresh database, as replicas starting together: each version is
    applied once and none fails. A runner used to wait for the advisory lock inside a statement,
    a transaction that the holder's CREATE INDEX CONCURRENTLY (0013) waited for in turn: a
    deadlock, and every replica but one failed to start."""
    name = postgres.unique_name("tenure_race")
    url = await postgres.create_database(server_url, name)
    try:
        applied = await asyncio.gather(migrate(url), migrate(url), migrate(url))
    finally:
        await postgres.drop_database(server_url, name)
    assert sorted(version for each in applied for version in each) == [
        migration.version for migration in available()
    ]
