"""The monitor with more jobs or held leases than it reads in a pass: each job is evaluated in
turn, and an open alert is resolved only on seeing its condition end, never because its subject
was beyond the pass's read."""

from __future__ import annotations

from typing import Any

from tests.api.test_leases import release
from tests.integration.test_monitor import client, fast_settings, overdue_job, running, sql

JOBS = ["job-a", "job-b", "job-c"]
# Passes the loop would run itself are run by the test: the loop waits longer than a test takes.
QUIET: dict[str, Any] = {"monitor_interval_seconds": 30, "monitor_lease_ttl_seconds": 60}


async def open_alerts(database_url: str) -> list[tuple[str, str]]:
    rows = await sql(
        database_url,
        "SELECT kind, subject FROM alerts WHERE resolved_at IS NULL ORDER BY kind, subject",
    )
    return [(row["kind"], row["subject"]) for row in rows]


async def held_since(database_url: str, lease: str, hours: int) -> None:
    await sql(
        database_url,
        "UPDATE leases SET acquired_at = now() - make_interval(hours => $2) WHERE name = $1",
        lease,
        hours,
    )


async def test_jobs_beyond_a_pass_are_alerted_and_not_taken_for_deleted(database_url: str) -> None:
    """Three missed windows and two jobs read a pass: each is alerted within two passes, none is
    resolved as deleted while its job lives (whichever page a pass reads), and a deleted job's
    alert is resolved."""
    settings = fast_settings(database_url, monitor_jobs_per_pass=2, **QUIET)
    async with running(settings) as (app,), client(app) as api:
        for job in JOBS:
            await overdue_job(api, database_url, job)
        for _ in range(2):
            assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("missed", job) for job in JOBS]
        for _ in range(3):  # every page of jobs, each time beside every open alert
            assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("missed", job) for job in JOBS]

        assert (await api.delete("/v1/jobs/job-a")).status_code == 204
        assert await app.monitor.run_pass()
        assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("missed", "job-b"), ("missed", "job-c")]
    events = await sql(database_url, "SELECT detail FROM job_events WHERE kind = 'alert_resolved'")
    assert [row["detail"] for row in events] == ["missed: job job-a was deleted"]


async def test_a_stuck_lease_beyond_those_examined_stays_alerted_until_released(
    database_url: str,
) -> None:
    """One lease examined a pass: a stuck alert whose lease another, held longer, displaced from
    the examined stays open while that generation is held, and is resolved once it is
    released."""
    settings = fast_settings(
        database_url, monitor_leases_per_pass=1, lease_stuck_after_seconds=3600, **QUIET
    )
    async with running(settings) as (app,), client(app) as api:
        held: dict[str, Any] = {}
        for name in ("lease-a", "lease-b"):
            answer = await api.post(
                f"/v1/leases/{name}/acquire", json={"holder": "h", "ttl_seconds": 600}
            )
            held[name] = answer.json()
        await held_since(database_url, "lease-b", 3)
        await held_since(database_url, "lease-a", 2)
        assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("stuck", "lease-b")]

        await held_since(database_url, "lease-a", 4)  # now the one examined
        assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("stuck", "lease-a"), ("stuck", "lease-b")]

        assert (await release(api, held["lease-b"])).status_code == 200
        assert await app.monitor.run_pass()
        assert await open_alerts(database_url) == [("stuck", "lease-a")]
