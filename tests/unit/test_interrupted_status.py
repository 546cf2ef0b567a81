"""`tenure status` shows interrupted windows and unregistered jobs, and decodes overviews of
services older than them (issue 26)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tenure._models import Overview
from tenure._status import UNREGISTERED_NOTE, render_overview

NOW = datetime(2026, 9, 25, 3, 0, tzinfo=UTC)
AT = NOW.isoformat()

STATUS: dict[str, Any] = {
    "status": "late",
    "window": "2026-09-25T03:00",
    "occurrence": AT,
    "deadline": AT,
    "next_occurrence": AT,
    "interval_seconds": 60,
    "last_completed_window": None,
    "last_completed_at": None,
    "last_duration_seconds": None,
    "running_window": None,
    "running_for_seconds": None,
    "duration_over_half_interval": False,
}
JOB: dict[str, Any] = {
    "name": "close-day",
    "schedule": "* * * * *",
    "timezone": "UTC",
    "key": "occurrence",
    "lease": "close-day",
    "deadline_seconds": 3600,
    "max_runtime_seconds": None,
    "labels": {},
    "created_at": AT,
    "updated_at": AT,
    "active_since": AT,
    "status": STATUS,
}
WINDOW: dict[str, Any] = {
    "job": "adhoc",
    "window": "k1",
    "lease": "work",
    "holder": "h",
    "generation": 1,
    "attempt": 1,
    "started_at": AT,
    "completed_at": None,
    "status": "running",
    "state": "interrupted",
}
EMPTY: dict[str, Any] = {"now": AT, "leases": [], "alerts": [], "events": []}


def jobs_table(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index("JOBS") + 1
    end = lines.index("", start)
    return [line.split() for line in lines[start:end] if line != UNREGISTERED_NOTE]


def test_status_shows_the_interrupted_window_and_unregistered_jobs() -> None:
    """A registered job's interrupted window is in its INTERRUPTED column; an unregistered job
    is a row of its own with no schedule nor next occurrence, and a note says why to register."""
    overview = Overview.from_json(
        EMPTY
        | {
            "jobs": [JOB | {"status": STATUS | {"interrupted_window": "2026-09-25T03:00"}}],
            "unregistered_jobs": [
                {"name": "adhoc", "registered": False, "last_started": WINDOW,
                 "last_completed": None, "interrupted_window": "k1"}
            ],
        }
    )  # fmt: skip
    text = render_overview(overview)
    header, registered, unregistered = jobs_table(text)
    assert header[-1] == "INTERRUPTED"
    assert registered[0] == "close-day"
    assert registered[-1] == "2026-09-25T03:00"
    assert unregistered == ["adhoc", "unregistered", "-", "-", "-", "-", "k1"]
    assert UNREGISTERED_NOTE in text


def test_an_overview_of_an_older_service_decodes() -> None:
    """No `unregistered_jobs`, no `interrupted_window`: nothing interrupted, none unregistered."""
    overview = Overview.from_json(EMPTY | {"jobs": [JOB]})
    assert overview.unregistered_jobs == ()
    assert overview.jobs[0].status.interrupted_window is None
    assert jobs_table(render_overview(overview))[1][-1] == "-"
