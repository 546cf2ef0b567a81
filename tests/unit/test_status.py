"""Job status, stuck leases and alert decisions: pure functions, table-driven, time zones and
daylight-saving days included."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from tenure.schedule import KeyFormat
from tenure_server.domain import alerts
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.status import (
    JobFacts,
    JobState,
    LeaseView,
    WindowFacts,
    expect,
    job_status,
    lease_age,
)
from tenure_server.domain.windows import Window

LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def job(
    cron: str,
    tz: str,
    *,
    key: KeyFormat = "occurrence",
    deadline: float = 3600,
    max_runtime: float | None = None,
    since: datetime = LONG_AGO,
) -> Job:
    spec = JobSpec(cron, tz, key, "lease", deadline, max_runtime)
    return Job("job", spec, since, since, since)


@dataclass
class Run:
    """A window in a scenario: started and maybe completed (ISO instants), lease still held."""

    key: str
    started: str
    completed: str | None = None
    held: bool = True

    def facts(self) -> WindowFacts:
        window = Window(
            "job",
            self.key,
            "lease",
            "h",
            1,
            1,
            at(self.started),
            None if self.completed is None else at(self.completed),
        )
        return WindowFacts(window, self.held)


@dataclass
class Case:
    name: str
    job: Job
    now: str
    expected: JobState
    window: str
    runs: list[Run] = field(default_factory=list)


def facts_of(runs: list[Run]) -> JobFacts:
    windows = {run.key: run.facts() for run in runs}
    completed = [run.facts().window for run in runs if run.completed is not None]
    started = max((run.facts() for run in runs), key=lambda f: f.window.started_at, default=None)
    last = max(completed, key=lambda w: w.completed_at or LONG_AGO, default=None)
    return JobFacts(windows, last, started)


SP = "America/Sao_Paulo"
NY = "America/New_York"
DAILY_SP = job("5 0 * * *", SP, key="previous_day", deadline=7200)

CASES = [
    Case(
        "registered after today's occurrence: new",
        job("5 0 * * *", SP, since=at("2026-09-25T10:00:00-03:00")),
        "2026-09-25T11:00:00-03:00",
        "new",
        "2026-09-25T00:05:00-03:00",
    ),
    Case(
        "past the occurrence, before the deadline: late",
        DAILY_SP,
        "2026-09-25T00:30-03:00",
        "late",
        "2026-09-24",
    ),
    Case("deadline passed: missed", DAILY_SP, "2026-09-25T02:06-03:00", "missed", "2026-09-24"),
    Case(
        "claimed, lease held: running",
        DAILY_SP,
        "2026-09-25T00:30-03:00",
        "running",
        "2026-09-24",
        [Run("2026-09-24", "2026-09-25T00:05:02-03:00")],
    ),
    Case(
        "claimed, lease lost (crashed): late",
        DAILY_SP,
        "2026-09-25T00:30-03:00",
        "late",
        "2026-09-24",
        [Run("2026-09-24", "2026-09-25T00:05:02-03:00", held=False)],
    ),
    Case(
        "running past the deadline: missed",
        DAILY_SP,
        "2026-09-25T03:00-03:00",
        "missed",
        "2026-09-24",
        [Run("2026-09-24", "2026-09-25T00:05:02-03:00")],
    ),
    Case(
        "completed: ok",
        DAILY_SP,
        "2026-09-25T09:00-03:00",
        "ok",
        "2026-09-24",
        [Run("2026-09-24", "2026-09-25T00:05:02-03:00", "2026-09-25T00:35:00-03:00")],
    ),
    Case(
        "running longer than max runtime: overrunning",
        job("5 0 * * *", SP, key="previous_day", deadline=14400, max_runtime=3600),
        "2026-09-25T01:30-03:00",
        "overrunning",
        "2026-09-24",
        [Run("2026-09-24", "2026-09-25T00:05:00-03:00")],
    ),
    Case(
        "registered after the occurrence, an earlier window completed: ok",
        job("5 0 * * *", SP, key="previous_day", since=at("2026-09-25T10:00-03:00")),
        "2026-09-25T11:00-03:00",
        "ok",
        "2026-09-24",
        [Run("2026-09-23", "2026-09-24T00:05-03:00", "2026-09-24T00:06-03:00")],
    ),
    # Spring forward: 02:30 does not exist in New York on 2026-03-08; it fires at 03:00-04:00.
    Case(
        "spring-forward day, 10 min after the shifted occurrence: late",
        job("30 2 * * *", NY, key="date", deadline=1800),
        "2026-03-08T03:10:00-04:00",
        "late",
        "2026-03-08",
    ),
    Case(
        "spring-forward day, deadline passed: missed",
        job("30 2 * * *", NY, key="date", deadline=1800),
        "2026-03-08T03:31:00-04:00",
        "missed",
        "2026-03-08",
    ),
    # Fall back: 01:30 happens twice; the job fires at the first (-04:00). At 01:45 of the second
    # pass (-05:00) 75 minutes have passed: a wall-clock comparison would still say "late".
    Case(
        "fall-back day, second pass of the repeated hour: missed",
        job("30 1 * * *", NY, deadline=1800),
        "2026-11-01T01:45:00-05:00",
        "missed",
        "2026-11-01T01:30:00-04:00",
    ),
    Case(
        "fall-back day, the first 01:00 run does not complete the second",
        job("0 * * * *", NY),
        "2026-11-01T01:30:00-05:00",
        "late",
        "2026-11-01T01:00:00-05:00",
        [
            Run(
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:00:01-04:00",
                "2026-11-01T01:00:05-04:00",
            )
        ],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_job_status(case: Case) -> None:
    """Each scenario gives the status operators expect, for the right window."""
    now = at(case.now)
    expectation = expect(case.job, now)
    status = job_status(case.job, expectation, facts_of(case.runs), now)
    assert (status.status, expectation.window) == (case.expected, case.window)


@pytest.mark.parametrize(
    ("cron", "tz", "now", "interval"),
    [
        ("5 0 * * *", SP, "2026-09-25T12:00-03:00", 86400),
        ("0 * * * *", "UTC", "2026-09-25T12:30+00:00", 3600),
        ("0 9 * * 1-5", "UTC", "2026-09-25T12:00+00:00", 86400),  # Friday: Thu→Fri is 1 day
        ("30 2 * * *", NY, "2026-03-08T12:00-04:00", 84600),  # 23.5 h around 03:00 (shifted)
        ("0 0 * * *", NY, "2026-11-01T12:00-05:00", 86400),  # midnight to midnight: 25 h later
    ],
)
def test_interval_is_the_shorter_one_around_the_occurrence(
    cron: str, tz: str, now: str, interval: float
) -> None:
    """The interval used for the overlap flag is the shorter of the two around the occurrence."""
    assert expect(job(cron, tz), at(now)).interval_seconds == interval


def test_deadline_is_shifted_in_utc_across_a_fall_back() -> None:
    """The deadline of 01:30-04:00 plus 30 min is 06:00Z, not 02:00 wall time (07:00Z)."""
    expectation = expect(job("30 1 * * *", NY, deadline=1800), at("2026-11-01T03:00-05:00"))
    assert expectation.deadline == at("2026-11-01T06:00:00+00:00")


@pytest.mark.parametrize(("hours", "slow"), [(11.9, False), (12.1, True)])
def test_a_run_longer_than_half_the_interval_is_flagged(hours: float, slow: bool) -> None:
    """A daily job whose last run took more than 12 hours is flagged: overlap is near."""
    start = at("2026-09-24T00:05-03:00")
    end = start + timedelta(hours=hours)
    runs = [Run("2026-09-23", start.isoformat(), end.isoformat())]
    now = at("2026-09-25T00:30-03:00")
    status = job_status(DAILY_SP, expect(DAILY_SP, now), facts_of(runs), now)
    assert status.slow is slow
    assert status.last_duration_seconds == pytest.approx(hours * 3600)
    assert status.last_completed_window == "2026-09-23"


def lease(held: bool = True, generation: int = 7) -> LeaseView:
    start = at("2026-09-25T00:00+00:00")
    return LeaseView("close-day", "host-1", generation, start, start + timedelta(hours=9), held, 60)


@pytest.mark.parametrize(
    ("held", "hours", "max_runtime", "stuck"),
    [
        (True, 5, None, False),
        (True, 7, None, True),  # longer than the configured bound (6 h)
        (True, 2, 3600.0, True),  # longer than the job's max runtime
        (False, 9, None, False),  # expired or released: not stuck, whatever its age
    ],
)
def test_a_lease_is_stuck_when_one_generation_is_held_too_long(
    held: bool, hours: float, max_runtime: float | None, stuck: bool
) -> None:
    """Stuck: held, one generation, for longer than the job's max runtime or the bound."""
    now = at("2026-09-25T00:00+00:00") + timedelta(hours=hours)
    assert lease_age(lease(held), now, 6 * 3600, max_runtime).stuck is stuck


def test_missed_alert_names_the_overdue_window_once_its_deadline_passed() -> None:
    """Before the deadline of today's window, the alert is about yesterday's (if it was not
    completed); after it, about today's."""
    yesterday = [Run("2026-09-23", "2026-09-24T00:05-03:00", "2026-09-24T00:06-03:00")]
    before, after = at("2026-09-25T01:00-03:00"), at("2026-09-25T02:06-03:00")
    assert alerts.job_alerts(DAILY_SP, expect(DAILY_SP, before), facts_of(yesterday), before) == []
    (alert,) = alerts.job_alerts(DAILY_SP, expect(DAILY_SP, after), facts_of(yesterday), after)
    assert (alert.kind, alert.subject, alert.window) == ("missed", "job", "2026-09-24")


def test_no_missed_alert_for_an_occurrence_before_registration() -> None:
    """A job registered after the occurrence is not blamed for it."""
    fresh = job("5 0 * * *", SP, key="previous_day", since=at("2026-09-25T10:00-03:00"))
    now = at("2026-09-25T11:00-03:00")
    assert alerts.job_alerts(fresh, expect(fresh, now), JobFacts(), now) == []


def test_overrunning_alert_names_the_running_window() -> None:
    """A run past max_runtime_seconds calls for an `overrunning` alert on its window."""
    slow = job("5 0 * * *", SP, key="previous_day", deadline=14400, max_runtime=600)
    now = at("2026-09-25T00:30-03:00")
    facts = facts_of(
        [
            Run("2026-09-23", "2026-09-24T00:05-03:00", "2026-09-24T00:06-03:00"),
            Run("2026-09-24", "2026-09-25T00:05-03:00"),
        ]
    )
    found = alerts.job_alerts(slow, expect(slow, now), facts, now)
    assert [(alert.kind, alert.window, alert.holder) for alert in found] == [
        ("overrunning", "2026-09-24", "h")
    ]


def test_resolution_rules() -> None:
    """A job alert ends when its window completes or the job is deleted; a stuck lease's when
    that generation is no longer held."""
    missed = alerts.Alert("missed", "job", "2026-09-24", "s")
    done = Run("2026-09-24", "2026-09-25T00:05-03:00", "2026-09-25T03:00-03:00").facts()
    running = Run("2026-09-24", "2026-09-25T00:05-03:00").facts()
    assert alerts.resolution(missed, job_active=True, window=running, lease=None) is None
    assert alerts.resolution(missed, job_active=True, window=done, lease=None)
    assert alerts.resolution(missed, job_active=False, window=None, lease=None)
    stuck = alerts.Alert("stuck", "close-day", "7", "s")
    assert alerts.resolution(stuck, job_active=True, window=None, lease=lease()) is None
    assert alerts.resolution(stuck, job_active=True, window=None, lease=lease(generation=8))
    assert alerts.resolution(stuck, job_active=True, window=None, lease=lease(held=False))


def test_payloads_and_backoff() -> None:
    """The generic payload has a stable id per transition; Slack gets text; backoff doubles up
    to its cap; targets are named by a hash, never by the URL."""
    alert = alerts.Alert("missed", "close-day", "2026-09-24", "late!")
    payload = alerts.notification(alert, "opened", at("2026-09-25T02:06-03:00"), "late!")
    assert payload["id"] == "missed/close-day/2026-09-24/opened"
    assert payload["status"] == "firing"
    assert payload["job"] == "close-day"
    assert "late!" in alerts.render("slack", payload)["text"]
    assert alerts.render("json", payload) == payload
    assert [alerts.retry_delay(n, 2, 30) for n in (1, 2, 3, 4, 5)] == [2, 4, 8, 16, 30]
    target = alerts.target_id("slack", "https://hooks.example/T000/B000/secret")
    assert target.startswith("slack:")
    assert "secret" not in target
