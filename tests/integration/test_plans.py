"""How much of `leases` a statement reads does not grow with the table where it should not: the
monitor's list reads the held leases and as many others as it lists, and a batch renew
compares each lease of the batch with its own row, from the first execution (PostgreSQL plans
the first five executions of a prepared statement with the values of their parameters)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeAlias

import asyncpg

from tenure_server.db.jobs import JobsRepository
from tenure_server.db.leases import QUERIES
from tenure_server.db.monitoring import MonitoringRepository
from tests.integration.test_monitored_leases import leases

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"

DAY = 86_400.0


async def fill(connection: Connection, prefix: str, count: int, *, held: bool) -> None:
    """`{prefix}{n}` for n < count, acquired two days ago, held for an hour or expired a day ago."""
    expiry = 3_600.0 if held else -DAY
    await leases(connection, *((f"{prefix}{n}", -2 * DAY, expiry) for n in range(count)))


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


async def analyzed(connection: Connection, statement: str, *args: object) -> list[dict[str, Any]]:
    """The plan nodes of the statement, run (EXPLAIN ANALYZE) with these parameters."""
    explain = "EXPLAIN (ANALYZE, FORMAT JSON) " + statement
    (document,) = json.loads(await connection.fetchval(explain, *args))
    return list(nodes(document["Plan"]))


def rows_read(plan: list[dict[str, Any]], relation: str) -> int:
    """Rows of `relation` the scans looked at, kept or filtered out, over all their loops."""
    return sum(
        (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node in plan
        if node.get("Relation Name") == relation
    )


async def test_the_monitor_reads_held_leases_and_only_as_many_others_as_it_lists(
    connection: Connection,
) -> None:
    await fill(connection, "gone-", 20_000, held=False)
    await fill(connection, "held-", 50, held=True)
    await connection.execute("ANALYZE leases")
    plan = await analyzed(connection, MonitoringRepository.QUERIES["monitored_leases"], 100)
    assert rows_read(plan, "leases") <= 200


async def test_a_batch_renew_never_compares_every_lease_with_every_lease_of_the_batch(
    connection: Connection,
) -> None:
    """Statistics that mislead: every lease has the same holder, expiry and no principal. On
    such a table `principal IS NOT DISTINCT FROM NULL` was estimated at one row, and the
    first executions joined the batch to a sequential scan in a nested loop: 640,000
    comparisons for 100 leases among 6,400 (220 ms, against 4 ms)."""
    await fill(connection, "rb-", 6_400, held=True)
    await connection.execute("ANALYZE leases")
    names = [f"rb-{n}" for n in range(0, 6_400, 64)]
    for _ in range(3):
        plan = await analyzed(
            connection, QUERIES["renew_leases"], names, [1] * len(names), "h", 60.0, None
        )
        compared = sum(
            node.get("Rows Removed by Join Filter", 0) * node["Actual Loops"] for node in plan
        )
        assert compared <= 10 * len(names)
        assert plan[0]["Actual Rows"] == len(names)


async def test_unregistered_jobs_are_found_without_reading_every_window(
    connection: Connection,
) -> None:
    """60,000 windows of six jobs, one registered: the loose index scan reads about one index
    entry per job, not the windows (issue 26)."""
    await connection.execute(
        "INSERT INTO job_windows (job, window_key, lease, holder, generation, started_at)"
        " SELECT 'job-' || (n % 6), 'k' || n, 'l', 'h', 1, now()"
        "   FROM generate_series(1, 60000) AS n"
    )
    await connection.execute(
        "INSERT INTO jobs (name, schedule, timezone, key_format, lease, deadline_seconds, labels,"
        " created_at, updated_at, active_since)"
        " VALUES ('job-3', '* * * * *', 'UTC', 'occurrence', 'job-3', 60, '{}', now(), now(),"
        " now())"
    )
    await connection.execute("ANALYZE job_windows")
    statement = JobsRepository.QUERIES["unregistered_jobs"]
    found = [row["job"] for row in await connection.fetch(statement, "", "", None, 100)]
    assert found == ["job-0", "job-1", "job-2", "job-4", "job-5"]
    plan = await analyzed(connection, statement, "", "", None, 100)
    assert rows_read(plan, "job_windows") <= 20
    # Stops once it has found as many as asked.
    page = await connection.fetch(statement, "job-0", "", None, 2)
    assert [row["job"] for row in page] == ["job-1", "job-2"]
