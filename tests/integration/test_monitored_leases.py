"""The monitor's list of leases (monitored_leases) reads held leases through their expiry bins and
the rest through the primary key, and lists exactly what sorting the whole table would list:
held ones first, oldest holding first, then the rest by name, up to the limit."""

from __future__ import annotations

import random

import asyncpg

from tenure_server.db import monitoring

# What the statement did before migration 0006: sort every lease. The oracle.
WHOLE_TABLE = """
SELECT l.name, l.holder, l.generation, l.acquired_at, l.expires_at,
       l.expires_at > now() AS held,
       greatest(0, extract(epoch FROM l.expires_at - now()))::float8 AS expires_in_seconds,
       (SELECT min(j.max_runtime_seconds) FROM jobs AS j
         WHERE j.lease = l.name AND j.deleted_at IS NULL) AS max_runtime_seconds
  FROM leases AS l
 ORDER BY l.expires_at > now() DESC,
          CASE WHEN l.expires_at > now() THEN l.acquired_at END,
          l.name
 LIMIT $1
"""

# A lease acquired and expiring the given seconds from now (negative: in the past).
INSERT = """
INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
                    acquired_xact)
SELECT n, 'h', 1, 30, now() + make_interval(secs => a), now(), now() + make_interval(secs => e),
       pg_current_xact_id()
  FROM unnest($1::text[], $2::float8[], $3::float8[]) AS t(n, a, e)
"""


async def listed(connection: asyncpg.Connection[asyncpg.Record], limit: int) -> list[str]:
    rows = await connection.fetch(monitoring.QUERIES["monitored_leases"], limit, [])
    return [row["name"] for row in rows]


async def leases(
    connection: asyncpg.Connection[asyncpg.Record], *rows: tuple[str, float, float]
) -> None:
    names, acquired, expires = zip(*rows, strict=True)
    await connection.execute(INSERT, list(names), list(acquired), list(expires))


async def test_held_leases_come_first_oldest_holding_first_then_the_rest_by_name(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    await leases(
        connection,
        ("x-b", -90, -1),  # expired a second ago: in the current expiry bin, not held
        ("h-late", -60, 30),
        ("x-a", -86400, -86000),
        ("h-early", -7200, 30),
        ("h-far", -600, 86400),
        ("x-c", -700, -600),
    )
    assert await listed(connection, 10) == ["h-early", "h-far", "h-late", "x-a", "x-b", "x-c"]
    assert await listed(connection, 4) == ["h-early", "h-far", "h-late", "x-a"]
    assert await listed(connection, 2) == ["h-early", "h-far"]
    assert await listed(connection, 0) == []


async def test_the_list_is_what_sorting_every_lease_would_give(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """Expiries spread around now and around the edges of the five-minute bins, ties in
    acquired_at, limits below, at and above the number held: both statements, one transaction
    (one now()), give the same rows."""
    chosen = random.Random(9)
    rows = []
    for n in range(400):
        expires = chosen.choice(
            [
                chosen.uniform(-86400, 86400),
                chosen.uniform(-2, 2),
                chosen.uniform(-600, 600),
                300 * chosen.randint(-3, 3) + chosen.uniform(-1, 1),
            ]
        )
        acquired = float(chosen.choice([-60, -3600, chosen.uniform(-7200, 0)]))
        rows.append((f"lease-{chosen.randrange(10**6):06d}-{n}", acquired, expires))
    await leases(connection, *rows)
    await connection.execute("ANALYZE leases")
    held = await connection.fetchval("SELECT count(*) FROM leases WHERE expires_at > now()")
    async with connection.transaction():
        for limit in (1, 7, held - 1, held, held + 1, held + 50, 1000):
            indexed = await connection.fetch(monitoring.QUERIES["monitored_leases"], limit, [])
            oracle = await connection.fetch(WHOLE_TABLE, limit)
            assert [tuple(row) for row in indexed] == [tuple(row) for row in oracle], limit
