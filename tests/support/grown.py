"""A database grown by use, bulk-loaded with SQL (generate_series), never through HTTP: lease
names (a few held, the rest expired long ago), their history, jobs with a long run of completed
windows and their history, and resolved alerts. One loader for the benchmark's grown-database
scenario (bench/grown.py), the plan tests (tests/integration/test_plans.py) and the grown
migration test, which loads leases and their history at the previous release's schema: those two
statements name only columns that schema has.

Names are `grown-<n>` (n from 1) for leases and `job-<n>` for jobs; job n runs under lease
`grown-<n>`, which is held by the holder and generation its windows name. History is spread over
the last `HISTORY_DAYS` days, within the default retention (30 days), so that a monitor pass has
nothing to prune: what a deployment that has run a year holds at steady state. Every
`notable_every`-th lease event is notable (a takeover, a lost renewal, a force-release).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeAlias

import asyncpg

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"

HISTORY_DAYS = 29
_HISTORY_SECONDS = HISTORY_DAYS * 86_400


@dataclass(frozen=True)
class Growth:
    """How much a database holds; the defaults are a year of use (issue 29)."""

    leases: int = 1_000_000
    held: int = 20_000
    lease_events: int = 5_000_000
    jobs: int = 1_000
    windows: int = 1_000_000
    job_events: int = 2_000_000
    alerts: int = 10_000
    notable_every: int = 50_000

    def scaled(self, fraction: float) -> Growth:
        """Every count times `fraction` (at least one), notable events as rare."""
        counts = {
            field.name: max(1, round(getattr(self, field.name) * fraction))
            for field in dataclasses.fields(self)
            if field.name != "notable_every"
        }
        return dataclasses.replace(self, **counts)

    def young(self) -> Growth:
        """The same jobs and held leases on their first day: no expired names, no past windows,
        no history beyond one event each, no alerts (what history adds is grown ÷ young)."""
        return dataclasses.replace(
            self,
            leases=self.held,
            lease_events=self.held,
            windows=self.jobs,
            job_events=self.jobs,
            alerts=0,
        )

    def describe(self) -> str:
        return (
            f"{self.leases:,} lease names ({self.held:,} held), {self.lease_events:,} lease "
            f"events (one in {self.notable_every:,} notable), {self.jobs:,} jobs with "
            f"{self.windows:,} windows, {self.job_events:,} job events, {self.alerts:,} resolved "
            "alerts"
        )


YEAR = Growth()

# $1 names, $2 held. The first $2 are held for an hour more by their holder (acquired within the
# last hour, so none is stuck); the others expired at some moment of the last year, every other
# one released.
LEASES = """
INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
                    released_at, acquired_xact, granted_xact)
SELECT 'grown-' || i, 'host-' || i % 97, 1 + i % 40, t.ttl, t.acquired, t.renewed,
       t.renewed + make_interval(secs => t.ttl),
       CASE WHEN i > $2 AND i % 2 = 0 THEN t.renewed + interval '10 seconds' END,
       pg_current_xact_id(), pg_current_xact_id()
  FROM generate_series(1, $1::int) AS i
 CROSS JOIN LATERAL (
    SELECT CASE WHEN i <= $2 THEN 3600 ELSE 30 END AS ttl,
           CASE WHEN i <= $2 THEN now() - make_interval(secs => i % 3000)
                ELSE now() - make_interval(secs => 3600 + i::bigint * 7919 % 31536000) END
               AS acquired,
           CASE WHEN i <= $2 THEN now() - make_interval(secs => i % 20)
                ELSE now() - make_interval(secs => 3590 + i::bigint * 7919 % 31536000) END
               AS renewed
 ) AS t
"""

# $1 events, $2 lease names, $3 one in how many is notable, $4 seconds the history spans.
# Consecutive events belong to one lease (few index pages touched per lease: a fast load), in the
# order of their time.
LEASE_EVENTS = """
INSERT INTO lease_events (lease, kind, holder, generation, previous_holder, previous_generation,
                          at)
SELECT 'grown-' || (1 + i::bigint * $2 / $1), k.kind, 'host-' || i % 97, 1 + i % 40,
       CASE WHEN k.notable THEN 'host-' || (i + 1) % 97 END,
       CASE WHEN k.notable THEN i % 40 END,
       now() - make_interval(secs => $4::float8 * ($1 - i) / $1)
  FROM generate_series(0, $1::int - 1) AS i
 CROSS JOIN LATERAL (
    SELECT i % $3 = $3 - 1 AS notable,
           CASE WHEN i % $3 = $3 - 1
                THEN (ARRAY['taken_over', 'renew_refused', 'force_released'])[1 + i / $3 % 3]
                WHEN i % 2 = 0 THEN 'acquired' ELSE 'released' END AS kind
 ) AS k
"""

# $1 jobs. Hourly jobs in force for a year, each under its lease grown-<n>.
JOBS = """
INSERT INTO jobs (name, schedule, timezone, key_format, lease, deadline_seconds, labels,
                  created_at, updated_at, active_since)
SELECT 'job-' || j, '0 * * * *', 'UTC', 'occurrence', 'grown-' || j, 7200, '{}',
       now() - interval '1 year', now() - interval '1 year', now() - interval '1 year'
  FROM generate_series(1, $1::int) AS j
"""

# $1 windows, $2 jobs. Each job's windows of its last $1 / $2 hourly occurrences (the current one
# included), claimed by its lease's holding and completed 30 s later: every job is `ok`.
WINDOWS = """
INSERT INTO job_windows (job, window_key, lease, holder, generation, started_at, completed_at)
SELECT 'job-' || j, to_char(o.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00',
       'grown-' || j, 'host-' || j % 97, 1 + j % 40, o.at, o.at + interval '30 seconds'
  FROM generate_series(1, $2::int) AS j
 CROSS JOIN generate_series(0, greatest(1, $1::int / $2::int) - 1) AS k
 CROSS JOIN LATERAL (SELECT date_trunc('hour', now()) - make_interval(hours => k) AS at) AS o
"""

# $1 events, $2 jobs, $3 seconds the history spans: claims and completions in time order.
JOB_EVENTS = """
INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt, at)
SELECT 'job-' || (1 + i % $2), CASE WHEN i % 2 = 0 THEN 'claimed' ELSE 'completed' END,
       'w' || i / 2, 'grown-' || (1 + i % $2), 'host-' || i % 97, 1, 1,
       now() - make_interval(secs => $3::float8 * ($1 - i) / $1)
  FROM generate_series(0, $1::int - 1) AS i
"""

# $1 alerts, $2 jobs, $3 seconds the history spans: missed windows, each resolved ten minutes
# after it opened.
ALERTS = """
INSERT INTO alerts (kind, subject, window_key, lease, holder, generation, summary, opened_at,
                    opened_by, resolved_at, resolved_by)
SELECT 'missed', 'job-' || (1 + i % $2), 'alert-' || i, 'grown-' || (1 + i % $2), NULL, NULL,
       'grown', t.at, 1, least(now(), t.at + interval '10 minutes'), 1
  FROM generate_series(0, $1::int - 1) AS i
 CROSS JOIN LATERAL (
    SELECT now() - make_interval(secs => $3::float8 * ($1 - i) / $1) AS at
 ) AS t
"""


async def grow_leases(connection: Connection, growth: Growth) -> None:
    """The lease names and their history (columns of every released schema since 0004)."""
    await connection.execute(LEASES, growth.leases, growth.held)
    await connection.execute(
        LEASE_EVENTS, growth.lease_events, growth.leases, growth.notable_every, _HISTORY_SECONDS
    )


async def grow_jobs(connection: Connection, growth: Growth) -> None:
    """Jobs, their windows and history, and resolved alerts."""
    await connection.execute(JOBS, growth.jobs)
    await connection.execute(WINDOWS, growth.windows, growth.jobs)
    await connection.execute(JOB_EVENTS, growth.job_events, growth.jobs, _HISTORY_SECONDS)
    await connection.execute(ALERTS, growth.alerts, growth.jobs, _HISTORY_SECONDS)


async def grow(url: str, growth: Growth, *, vacuum: bool = True) -> None:
    """Everything of `growth`, then VACUUM (ANALYZE) as autovacuum would have by then: statistics
    for the planner, and the visibility map and hint bits a table that has been read has."""
    connection = await asyncpg.connect(url)
    try:
        await grow_leases(connection, growth)
        await grow_jobs(connection, growth)
        await connection.execute("VACUUM (ANALYZE)" if vacuum else "ANALYZE")
    finally:
        await connection.close()
