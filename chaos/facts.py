"""What the database says after a run: the facts the checker holds the clients' history against.

Commit order comes from `pg_xact_commit_timestamp(xmin)` (the server runs with
`track_commit_timestamp = on`): the instant each fenced row's transaction committed, on the
database clock — the order in which the writes became visible, which an identity column (taken
when the row is inserted, not when it commits) would only approximate.
"""

from __future__ import annotations

from typing import Literal

import asyncpg

from chaos.database import settings_in_effect
from chaos.history import (
    DatabaseFacts,
    LeaseEvent,
    ResourceWrite,
    WindowEvent,
    WindowRow,
    micros,
)

SQL_WRITES_TABLE = """
CREATE TABLE IF NOT EXISTS chaos_writes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease      text NOT NULL,
    holder     text NOT NULL,
    generation bigint NOT NULL,
    worker     text NOT NULL
)
"""
LEASE_EVENTS = "SELECT id, lease, kind, holder, generation, at FROM lease_events ORDER BY id"
SQL_WRITES = """
SELECT id, lease AS resource, holder, generation, pg_xact_commit_timestamp(xmin) AS committed
  FROM chaos_writes ORDER BY id
"""
# The downstream app's payouts (examples/payments_api.py): the token it accepted is
# `<lease>/<generation>`, and the writer keys each payout `<holder>/<n>` (chaos.actor). A payout
# has no id column: the order of creation numbers them.
HTTP_WRITES = """
SELECT row_number() OVER (ORDER BY created_at, idempotency_key) AS id,
       regexp_replace(fencing_token, '/[^/]*$', '') AS resource,
       split_part(idempotency_key, '/', 1) AS holder,
       substring(fencing_token FROM '[^/]*$')::bigint AS generation,
       pg_xact_commit_timestamp(xmin) AS committed
  FROM payouts ORDER BY id
"""
WINDOW_EVENTS = """
SELECT id, job, kind, window_key, lease, holder, generation
  FROM job_events WHERE kind IN ('claimed', 'completed') ORDER BY id
"""
WINDOWS = """
SELECT job, window_key, lease, holder, generation, completed_at IS NOT NULL AS completed
  FROM job_windows
"""


async def _fetch(url: str, query: str) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        return list(await connection.fetch(query))
    except asyncpg.UndefinedTableError:
        return []
    finally:
        await connection.close()


def _write(path: Literal["sql", "http"], row: asyncpg.Record) -> ResourceWrite:
    return ResourceWrite(
        path=path,
        id=row["id"],
        resource=row["resource"],
        holder=row["holder"],
        generation=row["generation"],
        committed=micros(row["committed"]),
    )


async def collect(tenure_url: str, downstream_url: str | None) -> DatabaseFacts:
    events = await _fetch(tenure_url, LEASE_EVENTS)
    sql = await _fetch(tenure_url, SQL_WRITES)
    http = await _fetch(downstream_url, HTTP_WRITES) if downstream_url else []
    window_events = await _fetch(tenure_url, WINDOW_EVENTS)
    windows = await _fetch(tenure_url, WINDOWS)
    return DatabaseFacts(
        lease_events=tuple(
            LeaseEvent(
                row["id"],
                row["lease"],
                row["kind"],
                row["holder"],
                row["generation"],
                micros(row["at"]) or 0,
            )
            for row in events
        ),
        writes=tuple([_write("sql", row) for row in sql] + [_write("http", row) for row in http]),
        window_events=tuple(
            WindowEvent(
                row["id"],
                row["job"],
                row["kind"],
                row["window_key"],
                row["lease"],
                row["holder"],
                row["generation"],
            )
            for row in window_events
        ),
        windows=tuple(
            WindowRow(
                row["job"],
                row["window_key"],
                row["lease"],
                row["holder"],
                row["generation"],
                row["completed"],
            )
            for row in windows
        ),
        settings=await settings_in_effect(tenure_url),
    )
