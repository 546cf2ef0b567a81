"""Applies the numbered migrations in `migrations/` once each, in order, under an advisory lock."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from tenure_server.db.connecting import DEFAULT_CONNECT_TIMEOUT_SECONDS, connect
from tenure_server.db.sql import load

_log = logging.getLogger("tenure.migrate")
_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
_SQL = load("migrate.sql")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


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


async def migrate(dsn: str, connect_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS) -> list[int]:
    """Apply what is missing; returns the versions this call applied. `DatabaseUnreachable`
    when no connection can be opened within `connect_seconds`."""
    connection = await connect(dsn, connect_seconds)
    try:
        await connection.execute(_SQL["lock"])
        try:
            return await _apply_missing(connection)
        finally:
            await connection.execute(_SQL["unlock"])
    finally:
        await connection.close()


async def _apply_missing(connection: asyncpg.Connection) -> list[int]:
    await connection.execute(_SQL["create_table"])
    done = {row["version"] for row in await connection.fetch(_SQL["applied"])}
    applied: list[int] = []
    for migration in available():
        if migration.version in done:
            continue
        async with connection.transaction():
            await connection.execute(migration.sql)
            await connection.execute(_SQL["record"], migration.version, migration.name)
        _log.info("applied migration %04d_%s", migration.version, migration.name)
        applied.append(migration.version)
    return applied
