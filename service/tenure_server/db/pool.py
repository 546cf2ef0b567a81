"""The database behind the service: an embedded PostgreSQL when no URL is given, and the pool."""

from __future__ import annotations

import logging
import subprocess
import warnings
from pathlib import Path

import asyncpg

from tenure_server.db.connecting import DatabaseUnreachable
from tenure_server.db.connections import Pool, Record

_log = logging.getLogger("tenure.db")

# How much longer than statement_timeout the client waits for an answer before giving up.
CLIENT_TIMEOUT_MARGIN_SECONDS = 1.0


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL in `data_dir`; returns its URL. One line says
    what happened (pgserver's own lines are debug output: server/logs.py).

    pgserver keeps one server per data folder and stops it when the last process using it exits.
    """
    with warnings.catch_warnings():
        # Importing pgserver asks platformdirs for XDG_RUNTIME_DIR, which warns where it is not
        # set (containers, CI, su shells) and falls back to /tmp: fine for its lock file.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        from pgserver.postgres_server import get_server  # only without a database URL

    data_dir = data_dir.expanduser().resolve()
    if not (data_dir / "PG_VERSION").exists():
        state = "created and started"
    elif (data_dir / "postmaster.pid").exists():
        state = "joined (already running)"
    else:
        state = "started"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        server = get_server(data_dir, cleanup_mode="stop")
    except (OSError, subprocess.SubprocessError) as error:
        raise DatabaseUnreachable(
            f"the embedded PostgreSQL in {data_dir}",
            f"it did not start ({error}); its log is {data_dir / 'log'}",
        ) from None
    version = (data_dir / "PG_VERSION").read_text(encoding="utf-8").strip()
    _log.info("embedded PostgreSQL %s %s in %s (no TENURE_DATABASE_URL)", version, state, data_dir)
    return str(server.get_uri())


async def create_pool(
    dsn: str, *, min_size: int, max_size: int, statement_timeout_ms: int, lock_timeout_ms: int
) -> Pool:
    """One pool per process. Lease statements rely on READ COMMITTED (a losing acquire gets no row
    instead of a serialization failure), so the level is pinned here whatever the database
    default says; timeouts keep a slow database from holding requests forever, and a frozen
    process (SIGSTOP, a VM paused) from holding a transaction's row locks for longer than
    statement_timeout between its statements. The server enforces statement_timeout; a database
    that does not answer at all (frozen, partitioned away) cannot, so the client gives up a
    little later on its own.

    Pooled connections hold no session state (migrations and LISTEN have their own), so the
    reset on release is only asyncpg's rollback of an open transaction, not its default
    `RESET ALL; UNLISTEN *; …` round trip per request. JIT is off: these are one-row OLTP
    statements, and a plan on stale statistics that crossed jit_above_cost would compile on
    every execution. random_page_cost is 1.1, not 4 (a disk that seeks): the service's tables are
    read from memory, and with the default a small leases table (a new deployment's: 1,000
    names) made the batch acquire's generic plan hash-join the batch to three sequential scans
    of every lease, a plan kept while the table grew until autovacuum's next ANALYZE
    (bench/README.md, "How the cost grows with use"; tests/integration/test_plans.py)."""
    client_timeout = statement_timeout_ms / 1000 + CLIENT_TIMEOUT_MARGIN_SECONDS
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        command_timeout=client_timeout if statement_timeout_ms > 0 else None,
        reset=_keep_session,
        server_settings={
            "application_name": "tenure",
            "default_transaction_isolation": "read committed",
            "statement_timeout": str(statement_timeout_ms),
            "lock_timeout": str(lock_timeout_ms),
            # A transaction of the pool (a hand-off's release and acquire) left open by a
            # frozen process would hold its lease row: ended like a statement that long.
            "idle_in_transaction_session_timeout": str(statement_timeout_ms),
            "jit": "off",
            "random_page_cost": "1.1",
        },
    )
    return Pool(pool)


async def _keep_session(connection: asyncpg.Connection[Record]) -> None:
    """The pool's reset hook: asyncpg has already rolled back any open transaction."""
