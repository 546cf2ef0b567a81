"""The monitor with more open alerts than it reads in a pass: it opens none of them again (no
webhook, no log line), and resolves those beyond its page as well as the first ones."""

from __future__ import annotations

import logging

import pytest

from tests.integration.test_monitor import (
    client,
    complete,
    eventually,
    fast_settings,
    overdue_job,
    running,
    sql,
)
from tests.integration.webhook_receiver import webhook_receiver

PAGE = 2
JOBS = ["job-a", "job-b", "job-c", "job-d", "job-e"]


def opened_lines(caplog: pytest.LogCaptureFixture) -> int:
    return sum(getattr(r, "event", None) == "alert.opened" for r in caplog.records)


async def test_more_open_alerts_than_a_page(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Five open alerts and a page of two: later passes open, send and log nothing again, and the
    three newest, beyond the two oldest that stay open, are resolved when their windows complete
    (a read of the oldest open alerts never saw them)."""
    caplog.set_level(logging.INFO, logger="tenure.events")
    with webhook_receiver() as receiver:
        settings = fast_settings(
            database_url,
            receiver,
            monitor_open_alerts_per_pass=PAGE,
            monitor_interval_seconds=30,
            monitor_lease_ttl_seconds=60,
        )
        async with running(settings) as (app,), client(app) as api:
            monitor = app.monitor
            windows = {job: await overdue_job(api, database_url, job) for job in JOBS}
            assert await monitor.run_pass()
            # The loop's delivery task, woken by the pass, sends them.
            await eventually(lambda: len(receiver.at("/json")) == len(JOBS))
            assert opened_lines(caplog) == len(JOBS)
            # The first two are the oldest: a read of the oldest open alerts sees only them.
            await sql(
                database_url,
                "UPDATE alerts SET opened_at = opened_at - interval '1 hour'"
                " WHERE subject = ANY($1::text[])",
                JOBS[:PAGE],
            )

            for _ in range(3):
                assert await monitor.run_pass()
            assert opened_lines(caplog) == len(JOBS)  # not logged again
            counts = await sql(
                database_url,
                "SELECT (SELECT count(*) FROM alerts), (SELECT count(*) FROM webhook_deliveries),"
                " (SELECT count(*) FROM job_events WHERE kind = 'alert_opened')",
            )
            # No alert row, no delivery (one per webhook: none to send again), no job event.
            assert tuple(counts[0]) == (len(JOBS), 2 * len(JOBS), len(JOBS))

            for job in JOBS[PAGE:]:  # the newest alerts, beyond the oldest page
                await complete(api, job, windows[job])
            for _ in range(len(JOBS) // PAGE + 2):  # every page once, wherever the turn stands
                assert await monitor.run_pass()
            await eventually(lambda: len(receiver.at("/json")) == len(JOBS) + len(JOBS[PAGE:]))
    rows = await sql(database_url, "SELECT subject FROM alerts WHERE resolved_at IS NULL")
    assert sorted(row["subject"] for row in rows) == JOBS[:PAGE]
    sent = [(body["event"], body["job"]) for body in receiver.at("/json")]
    assert sorted(sent) == sorted(
        [("alert.opened", job) for job in JOBS] + [("alert.resolved", job) for job in JOBS[PAGE:]]
    )
