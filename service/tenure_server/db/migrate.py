"""Applies the numbered migrations in `migrations/` once each, in order, under an advisory lock.

A migration waits at most `lock_timeout` for each lock it needs, then is rolled back and tried
again after a growing pause: DDL queued behind a fenced transaction (a lease row held FOR SHARE)
would otherwise hold every acquire in the lock queue behind itself for as long as that
transaction lasts. A file whose first line is `-- tenure: no-transaction` runs outside a
transaction, one statement at a time (each ends with `;` at the end of a line), for
`CREATE INDEX CONCURRENTLY`: its version is recorded after its last statement, so a failed run is
tried again from its first statement, which must therefore all be idempotent
(`DROP INDEX CONCURRENTLY IF EXISTS` before `CREATE INDEX CONCURRENTLY`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources

import asyncpg

from tenure_server.db.connecting import DEFAULT_CONNECT_TIMEOUT_SECONDS, connect
from tenure_server.db.sql import load

_log = logging.getLogger("tenure.migrate")
_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
_SQL = load("migrate.sql")
NO_TRANSACTION = "-- tenure: no-transaction"
_STATEMENT_END = re.compile(r";[ \t]*$", re.MULTILINE)

# TENURE_MIGRATION_LOCK_TIMEOUT_MS: short, because every acquire of a table the migration
# alters queues behind it while it waits.
DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 500
# TENURE_MIGRATION_LOCK_ATTEMPTS: with the pauses below, about two minutes before giving up.
DEFAULT_MIGRATION_LOCK_ATTEMPTS = 30
_FIRST_PAUSE_SECONDS = 0.1
_LONGEST_PAUSE_SECONDS = 5.0
# Between two tries of the runner's own advisory lock, held by another runner meanwhile.
_LOCK_PAUSE_SECONDS = 0.5


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def transactional(self) -> bool:
        return not self.sql.startswith(NO_TRANSACTION)

    def statements(self) -> list[str]:
        """A no-transaction migration's statements, in order."""
        parts = _STATEMENT_END.split(self.sql)
        return [part.strip() + ";" for part in parts if _code(part)]


def _code(text: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in text.splitlines())


@dataclass(frozen=True)
class LockPatience:
    """How long a migration waits for a lock (`lock_timeout_ms`), and how many times it is tried
    (`attempts`), pausing 0.1 s, 0.2 s, … (at most 5 s) between two tries."""

    lock_timeout_ms: int = DEFAULT_MIGRATION_LOCK_TIMEOUT_MS
    attempts: int = DEFAULT_MIGRATION_LOCK_ATTEMPTS

    def pause(self, failed: int) -> float:
        return min(_FIRST_PAUSE_SECONDS * 2.0 ** (failed - 1), _LONGEST_PAUSE_SECONDS)


class MigrationLocked(RuntimeError):
    """A migration found a lock taken on every try: some transaction held a table it alters."""

    def __init__(self, migration: Migration, patience: LockPatience) -> None:
        super().__init__(
            f"migration {migration.version:04d}_{migration.name} waited {patience.attempts} times "
            f"{patience.lock_timeout_ms} ms for a lock and gave up: a long transaction holds a "
            "table it alters (TENURE_MIGRATION_LOCK_TIMEOUT_MS, TENURE_MIGRATION_LOCK_ATTEMPTS)"
        )


def available() -> list[Migration]:
    """The packaged migrations, ordered by version; versions must be unique."""
    found: list[Migration] = []
    for entry in resources.files("tenure_server.db.migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match["version"]), match["name"], entry.read_text("utf-8")))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions in {versions}")
    return found


def latest_version() -> int:
    return available()[-1].version


async def migrate(
    dsn: str,
    connect_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    patience: LockPatience = LockPatience(),
    migrations: Sequence[Migration] | None = None,
) -> list[int]:
    """Apply what is missing of `migrations` (the packaged ones by default); returns the versions
    this call applied. `DatabaseUnreachable` when no connection can be opened within
    `connect_seconds`; `MigrationLocked` when a migration's locks stayed taken on every try."""
    connection = await connect(dsn, connect_seconds)
    try:
        await _lock(connection)
        try:
            await connection.execute(_SQL["lock_timeout"], str(patience.lock_timeout_ms))
            return await _apply_missing(
                connection, patience, available() if migrations is None else migrations
            )
        finally:
            await connection.execute(_SQL["unlock"])
    finally:
        await connection.close()


async def _lock(connection: asyncpg.Connection) -> None:
    """Take the runner's advisory lock, trying again after a pause while another runner holds
    it (see migrate.sql: waiting inside a statement deadlocks with a concurrent index build)."""
    failed = 0
    while not await connection.fetchval(_SQL["lock"]):
        failed += 1
        await asyncio.sleep(min(_FIRST_PAUSE_SECONDS * failed, _LOCK_PAUSE_SECONDS))


async def _apply_missing(
    connection: asyncpg.Connection, patience: LockPatience, migrations: Sequence[Migration]
) -> list[int]:
    await connection.execute(_SQL["create_table"])
    done = {row["version"] for row in await connection.fetch(_SQL["applied"])}
    applied: list[int] = []
    for migration in migrations:
        if migration.version in done:
            continue
        await _patiently(patience, migration, partial(_apply, connection, migration))
        _log.info("applied migration %04d_%s", migration.version, migration.name)
        applied.append(migration.version)
    return applied


async def _apply(connection: asyncpg.Connection, migration: Migration) -> None:
    if migration.transactional:
        async with connection.transaction():
            await connection.execute(migration.sql)
            await connection.execute(_SQL["record"], migration.version, migration.name)
        return
    for statement in migration.statements():
        await connection.execute(statement)
    await connection.execute(_SQL["record"], migration.version, migration.name)


async def _patiently(
    patience: LockPatience, migration: Migration, attempt: Callable[[], Awaitable[object]]
) -> None:
    """Run `attempt` until no lock wait times out in it, at most `patience.attempts` times."""
    for tried in range(1, patience.attempts + 1):
        try:
            await attempt()
            return
        except asyncpg.LockNotAvailableError:
            _log.warning(
                "migration %04d_%s waited %d ms for a lock (try %d of %d)",
                migration.version,
                migration.name,
                patience.lock_timeout_ms,
                tried,
                patience.attempts,
            )
            if tried < patience.attempts:
                await asyncio.sleep(patience.pause(tried))
    raise MigrationLocked(migration, patience)
