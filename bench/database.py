"""The benchmark's PostgreSQL: an embedded server in a fresh folder (pgserver, unix socket only:
`tests.support.postgres`), or a server given by URL, in which a throw-away database is created
for the run and dropped at the end. Also the rows the workloads start from (held leases to
renew, release and claim under), written in bulk before a measurement and never timed."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import asyncpg
from cpu import parent_pid
from tests.support import postgres

# Tenure (2 workers x 10 pooled + listeners), the naive app (2 x 10), and 64 raw connections or
# 64 pgbench clients can all be connected at once.
MAX_CONNECTIONS = 300
# Every held lease the workloads start from: holder "bench", generation 1, no principal (the
# service runs without authentication), one hour to live, granted by the inserting transaction
# as an acquire grants it, so that a release can name that grant (release_lease requires it).
PREFILL = """
INSERT INTO leases AS l (name, holder, generation, ttl_seconds, acquired_at, renewed_at,
                         expires_at, acquired_xact, granted_xact, principal)
SELECT $1 || c || '-' || n, 'bench', 1, 3600, now(), now(), now() + interval '1 hour',
       pg_current_xact_id(), pg_current_xact_id(), NULL
  FROM generate_series(0, $2::int - 1) AS c, generate_series(0, $3::int - 1) AS n
    ON CONFLICT (name) DO NOTHING
"""


@dataclass(frozen=True)
class Database:
    url: str
    # Where pgbench finds the server: the socket folder of the embedded one, else the URL.
    pgbench_target: tuple[str, ...]
    pgbench: str


def _pgbench_binary() -> str:
    """pgserver's own (the same version as the embedded server), else the one on PATH."""
    bundled = postgres.program("pgbench")
    if bundled.exists():
        return str(bundled)
    found = shutil.which("pgbench")
    if found is None:
        raise RuntimeError(
            "pgbench not found: install pgserver (it ships one) or postgresql-client"
        )
    return found


@contextmanager
def bench_database(given_url: str | None) -> Iterator[Database]:
    """A fresh database `tenure_bench` for this run, dropped afterwards; on the embedded server
    (removed afterwards too) unless a URL is given."""
    embedded = given_url is None
    # The default of 100 connections is too few for every system of a run at once.
    settings = {"max_connections": str(MAX_CONNECTIONS)}
    with postgres.server(given_url, settings) as server_url:
        name = "tenure_bench" if embedded else f"tenure_bench_{os.getpid()}"
        fresh = (f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}")
        asyncio.run(postgres.execute(server_url, *fresh))
        url = postgres.with_database(server_url, name)
        host = parse_qs(urlsplit(url).query).get("host")
        target = ("-h", host[0], "-U", "postgres", name) if embedded and host else (url,)
        try:
            yield Database(url, target, _pgbench_binary())
        finally:
            drop = f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            asyncio.run(postgres.execute(server_url, drop))


@contextmanager
def side_databases(server_url: str, label: str, sides: Sequence[str]) -> Iterator[dict[str, str]]:
    """One empty database per side of a comparison, on the server of `server_url`, named
    `tenure_<label>_<side>_<pid>`; their URLs by side, and the databases dropped afterwards."""
    names = {side: f"tenure_{label}_{side}_{os.getpid()}" for side in sides}
    asyncio.run(postgres.execute(server_url, *(f"CREATE DATABASE {n}" for n in names.values())))
    try:
        yield {side: postgres.with_database(server_url, name) for side, name in names.items()}
    finally:
        drops = (f"DROP DATABASE IF EXISTS {name} WITH (FORCE)" for name in names.values())
        asyncio.run(postgres.execute(server_url, *drops))


async def prefill(url: str, prefix: str, groups: int, per_group: int) -> str:
    """Held leases named `{prefix}{group}-{n}` for group < groups and n < per_group; returns
    their grant (one transaction inserts them all, so they share it; names already there keep
    theirs). The table is analyzed afterwards, as autovacuum would have done in a running
    system: plans made on the statistics of a table before a bulk insert can be far off
    (renew_leases, for one, then scans the whole table once per lease in the batch)."""
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction():
            await connection.execute(PREFILL, prefix, groups, per_group)
            grant: str = await connection.fetchval("SELECT pg_current_xact_id()::text")
        await connection.execute("ANALYZE leases")
        return grant
    finally:
        await connection.close()


async def settle(url: str) -> None:
    """What the throughput workloads left behind cleaned up before the latency scenarios, as
    pgbench vacuums before its own runs: millions of dead rows and unflushed pages that
    autovacuum and the next checkpoint would otherwise work through during the hand-offs, a
    tail of the harness's making. A role that may not checkpoint skips that part."""
    await postgres.execute(url, "VACUUM (ANALYZE)")
    with suppress(asyncpg.InsufficientPrivilegeError):
        await postgres.execute(url, "CHECKPOINT")


async def server_facts(url: str) -> dict[str, str]:
    """The settings that decide the database's side of the numbers, for the report."""
    connection = await asyncpg.connect(url)
    try:
        facts: dict[str, str] = {"version": str(await connection.fetchval("SHOW server_version"))}
        for setting in ("synchronous_commit", "fsync", "max_connections", "shared_buffers"):
            facts[setting] = str(await connection.fetchval(f"SHOW {setting}"))
        return facts
    finally:
        await connection.close()


async def postmaster_pid(url: str) -> int | None:
    """The server's main process, when it runs on this machine: the parent of our backend."""
    connection = await asyncpg.connect(url)
    try:
        backend: int = await connection.fetchval("SELECT pg_backend_pid()")
        return parent_pid(backend)
    finally:
        await connection.close()
