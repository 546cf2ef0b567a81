"""How much of a table a statement reads does not grow with the table where it should not: the
monitor's list reads the held leases and as many others as it lists, a batch renew compares
each lease of the batch with its own row, from the first execution (PostgreSQL plans the first
five executions of a prepared statement with the values of their parameters), and the overview
and the jobs listing read as much history as they show."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeAlias

import asyncpg
import httpx
import pytest

from tenure_server.db import jobs, monitoring
from tenure_server.db.connections import Connections
from tenure_server.db.leases import QUERIES
from tenure_server.db.pool import create_pool
from tenure_server.db.windows import QUERIES as WINDOWS
from tests.integration.test_monitored_leases import leases
from tests.support.grown import Growth, grow

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"
# A connection of its own, or one of the service's pool (with the pool's session settings).
Pooled: TypeAlias = "asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"

DAY = 86_400.0
# The statements whose runs `statements_run` records, by name.
STATEMENTS = {**jobs.QUERIES, **monitoring.QUERIES}


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
    plan = await analyzed(connection, monitoring.QUERIES["monitored_leases"], 100, [])
    assert rows_read(plan, "leases") <= 200


async def test_the_monitor_reads_the_leases_of_its_stuck_alerts_by_name(
    connection: Connection,
) -> None:
    """The leases of open stuck alerts beyond those examined, read by name among 20,000: only
    those rows (and the held ones within the limit), never the table."""
    await fill(connection, "gone-", 20_000, held=False)
    await fill(connection, "held-", 50, held=True)
    await connection.execute("ANALYZE leases")
    named = ["gone-17", "gone-4242", "held-3"]
    plan = await analyzed(connection, monitoring.QUERIES["monitored_leases"], 0, named)
    assert rows_read(plan, "leases") <= 10


async def test_the_monitor_reads_a_page_of_open_alerts_not_the_resolved_ones(
    connection: Connection,
) -> None:
    """The monitor's page of open alerts, after a key in the middle, among 20,000 resolved
    ones: it reads the page through alerts_open_by_key (migration 0017), not the history."""
    await connection.execute(
        "INSERT INTO alerts (kind, subject, window_key, summary, opened_at, opened_by,"
        " resolved_at) SELECT 'missed', 'job-' || (n % 50), 'k' || n, 's', now(), 1,"
        " CASE WHEN n % 100 <> 0 THEN now() END FROM generate_series(1, 20000) AS n"
    )
    await connection.execute("ANALYZE alerts")
    query = monitoring.QUERIES["open_alerts_after"]
    plan = await analyzed(connection, query, "missed", "job-0", "k5000", 50)
    assert plan[0]["Actual Rows"] == 50
    assert rows_read(plan, "alerts") <= 2 * 50


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
    statement = jobs.QUERIES["unregistered_jobs"]
    found = [row["job"] for row in await connection.fetch(statement, "", "", None, 100)]
    assert found == ["job-0", "job-1", "job-2", "job-4", "job-5"]
    plan = await analyzed(connection, statement, "", "", None, 100)
    assert rows_read(plan, "job_windows") <= 20
    # Stops once it has found as many as asked.
    page = await connection.fetch(statement, "job-0", "", None, 2)
    assert [row["job"] for row in page] == ["job-1", "job-2"]


async def generic_plan(
    connection: Connection | Pooled, statement: str, *literals: str
) -> list[dict[str, Any]]:
    """The plan nodes of the statement run as asyncpg runs it from its sixth execution on: one
    plan for any parameters (a generic plan), with these SQL literals bound."""
    await connection.execute("SET plan_cache_mode = force_generic_plan")
    await connection.execute(f"PREPARE page AS {statement.strip().rstrip(';')}")
    explain = f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE page({', '.join(literals)})"
    (document,) = json.loads(await connection.fetchval(explain))
    await connection.execute("DEALLOCATE page; RESET plan_cache_mode")
    return list(nodes(document["Plan"]))


async def test_an_acquire_finds_its_names_by_index_in_a_small_table(
    database_url: str, connection: Connection
) -> None:
    """A new deployment's leases table is small. With 1,000 leases analyzed and the default
    random_page_cost (4), the batch acquire's generic plan hash-joined the batch to three
    sequential scans of every lease, and kept them while the table grew until the next ANALYZE
    (an empty database served 2,442 acquires/s where a grown one served 6,977). The pool's
    settings make it look names up by primary key whatever the table's size."""
    await fill(connection, "small-", 1_000, held=True)
    await connection.execute("ANALYZE leases")
    pool = await create_pool(
        database_url, min_size=1, max_size=1, statement_timeout_ms=0, lock_timeout_ms=0
    )
    try:
        async with pool.acquire() as pooled:
            plan = await generic_plan(
                pooled, QUERIES["acquire_leases"], "'{new}'", "'{h}'", "'{30}'", "'{NULL}'"
            )
    finally:
        await pool.close()
    scans = [node for node in plan if node.get("Relation Name") == "leases"]
    assert scans
    assert not [node["Node Type"] for node in scans if node["Node Type"] == "Seq Scan"]


async def test_a_page_reads_as_much_as_it_shows_under_a_generic_plan(
    connection: Connection,
) -> None:
    """A page's bound (a cursor, a prefix's end, none) is an index condition in the plan reused
    for any parameters too: 10,000 windows and 10,000 events of each of six jobs, and a page of
    ten reads at most a hundred rows (the planner may walk every job's events in id order, one in
    six of them the job's). Written `($3 IS NULL OR name < $3)`, the bound was a filter there, and
    a page deep in a job's events read every newer event."""
    await connection.execute(
        "INSERT INTO job_windows (job, window_key, lease, holder, generation, started_at)"
        " SELECT 'job-' || (n % 6), 'k' || n, 'l', 'h', 1, now()"
        "   FROM generate_series(1, 60000) AS n"
    )
    await connection.execute(
        "INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt, at)"
        " SELECT 'job-' || (n % 6), 'claimed', 'k' || n, 'l', 'h', 1, 1, now()"
        "   FROM generate_series(1, 60000) AS n"
    )
    await connection.execute("ANALYZE job_windows, job_events")
    middle = await connection.fetchval("SELECT id FROM job_events ORDER BY id OFFSET 30000 LIMIT 1")
    pages = {
        "unregistered jobs up to a bound": (
            jobs.QUERIES["unregistered_jobs"],
            "''",
            "''",
            "'job-2'",
            "10",
        ),
        "unregistered jobs, no bound": (
            jobs.QUERIES["unregistered_jobs"],
            "''",
            "''",
            "NULL",
            "10",
        ),
        "a job's events before a cursor": (
            jobs.QUERIES["job_events"],
            "'job-1'",
            str(middle),
            "10",
        ),
        "a job's newest events": (jobs.QUERIES["job_events"], "'job-1'", "NULL", "10"),
        "a job's windows before a cursor": (WINDOWS["list_windows"], "'job-1'", "'k5'", "10"),
    }
    for page, (statement, *literals) in pages.items():
        plan = await generic_plan(connection, statement, *literals)
        read = rows_read(plan, "job_windows") + rows_read(plan, "job_events")
        assert read <= 100, f"{page}: read {read} rows"


# A database grown modestly, its history read through what the service runs: 50,000 lease events
# of which two are notable, 2,000 resolved alerts, 200 jobs with a hundred windows each.
GROWN = Growth(
    leases=5_000,
    held=100,
    lease_events=50_000,
    jobs=200,
    windows=20_000,
    job_events=20_000,
    alerts=2_000,
    notable_every=20_000,
)
# Read by the overview and the jobs listing: EXPLAIN ANALYZE runs them again, harmlessly.
READS = frozenset(
    {
        "recent_events",
        "monitored_leases",
        "open_alerts",
        "list_jobs",
        "window_facts",
        "unregistered_jobs",
    }
)
Run: TypeAlias = list[tuple[str, tuple[object, ...]]]


@pytest.fixture
def statements_run(monkeypatch: pytest.MonkeyPatch) -> Run:
    """The statements the app runs through its repositories meanwhile, by name, with their
    parameters (the real statements, only recorded on their way)."""
    run: Run = []
    fetch = Connections._fetch
    names = {statement: name for name, statement in STATEMENTS.items()}

    async def recorded(self: Connections, statement: str, *args: Any) -> list[asyncpg.Record]:
        if statement in names:
            run.append((names[statement], args))
        return await fetch(self, statement, *args)

    monkeypatch.setattr(Connections, "_fetch", recorded)
    return run


async def plans_of(connection: Connection, run: Run) -> dict[str, list[dict[str, Any]]]:
    """Each read statement that was run, run again under EXPLAIN ANALYZE with its parameters
    (the last run of each name)."""
    return {
        query: await analyzed(connection, STATEMENTS[query], *args)
        for query, args in run
        if query in READS
    }


def scanned_whole(plan: list[dict[str, Any]], *relations: str) -> list[str]:
    return [
        node["Relation Name"]
        for node in plan
        if node["Node Type"] == "Seq Scan" and node.get("Relation Name") in relations
    ]


async def test_the_overview_reads_as_much_history_as_it_shows(
    database_url: str, api: httpx.AsyncClient, connection: Connection, statements_run: Run
) -> None:
    """Notable lease events are few among many: recent_events reads no more of lease_events or
    alerts than it lists, through the indexes of migration 0013 (it read all 50,000 rows
    before); no statement of the overview scans the lease or job history whole, nor the lease
    names to tell whether windows are held (issue 29)."""
    await grow(database_url, GROWN)
    response = await api.get("/v1/overview")
    assert response.status_code == 200, response.text
    assert len(response.json()["events"]) == 30
    plans = await plans_of(connection, statements_run)
    assert set(plans) == READS
    for query, plan in plans.items():
        assert scanned_whole(plan, "lease_events", "job_events") == [], query
    assert rows_read(plans["recent_events"], "lease_events") <= 30
    # Whether each window's holding still holds its lease: one lookup per window, not every name.
    assert scanned_whole(plans["window_facts"], "leases") == []
    assert rows_read(plans["recent_events"], "alerts") <= 2 * 30


async def test_a_page_of_jobs_reads_windows_of_the_jobs_it_lists_only(
    database_url: str, api: httpx.AsyncClient, connection: Connection, statements_run: Run
) -> None:
    """GET /v1/jobs?limit=20 among 200 registered jobs reads a few windows per listed job: the
    walk for unregistered jobs stops where the page of registered ones ends (it stepped over all
    200 before)."""
    await grow(database_url, GROWN)
    response = await api.get("/v1/jobs", params={"limit": 20})
    assert response.status_code == 200, response.text
    assert len(response.json()["items"]) == 20
    assert response.json()["next_cursor"] is not None
    plans = await plans_of(connection, statements_run)
    read = sum(rows_read(plan, "job_windows") for plan in plans.values())
    assert read <= 5 * 20
