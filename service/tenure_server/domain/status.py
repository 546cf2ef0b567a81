"""A job's status, in the vocabulary of cron monitors, and whether a lease is stuck.

Pure functions of the job definition, the facts read from the database, and the database clock.
Every instant is compared and shifted in UTC: two datetimes of one zone compare by wall time in
Python, which would get the repeated hour of a daylight-saving fall-back day wrong.

- `new`: no occurrence since the job was registered, and no window ever completed;
- `ok`: the current occurrence's window is completed (or nothing is due yet since registration);
- `running`: a run holds its lease and its window is not completed, deadline not reached;
- `late`: past the occurrence, not completed, deadline not reached;
- `missed`: the deadline passed without completion;
- `overrunning`: a run has been going longer than `max_runtime_seconds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from tenure import schedule
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.windows import Window

JobState = Literal["new", "ok", "running", "late", "missed", "overrunning"]
JOB_STATES: tuple[JobState, ...] = ("new", "ok", "running", "late", "missed", "overrunning")
_TICK = timedelta(microseconds=1)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Expectation:
    """Where a job's schedule stands at an instant. Occurrences are in the job's zone."""

    occurrence: datetime
    window: str
    deadline: datetime
    next_occurrence: datetime
    # The shorter of the two intervals around the current occurrence: where overlap starts.
    interval_seconds: float
    # The latest occurrence whose deadline has passed: the one a `missed` alert is about.
    overdue_occurrence: datetime
    overdue_window: str


@dataclass(frozen=True, slots=True)
class Span:
    """An expectation and the instants it holds for: from `since` up to (not including) `until`,
    in UTC, the current and the overdue occurrences do not move, so neither does any field."""

    expectation: Expectation
    since: datetime
    until: datetime

    def holds_at(self, now: datetime) -> bool:
        return self.since <= _utc(now) < self.until


def expect(job: Job, now: datetime) -> Expectation:
    """The current occurrence of `job` at `now`, its window key and deadline, and the rest."""
    return expect_span(job.spec, now).expectation


def expect_span(spec: JobSpec, now: datetime) -> Span:
    """`expect` at `now` of a job with `spec`, and the span of instants it holds for: the
    current occurrence's bracket, narrowed to where `now - deadline` keeps its overdue one."""
    occurrence = schedule.scheduled_occurrence(spec.schedule, spec.timezone, now)
    following = schedule.next_occurrence(spec.schedule, spec.timezone, now)
    previous = schedule.scheduled_occurrence(spec.schedule, spec.timezone, _utc(occurrence) - _TICK)
    interval = min(_utc(following) - _utc(occurrence), _utc(occurrence) - _utc(previous))
    deadline = timedelta(seconds=spec.deadline_seconds)
    overdue_at = _utc(now) - deadline
    overdue = schedule.scheduled_occurrence(spec.schedule, spec.timezone, overdue_at)
    after_overdue = schedule.next_occurrence(spec.schedule, spec.timezone, overdue_at)
    expectation = Expectation(
        occurrence=occurrence,
        window=schedule.window_key(occurrence, spec.key),
        deadline=_utc(occurrence) + deadline,
        next_occurrence=following,
        interval_seconds=interval.total_seconds(),
        overdue_occurrence=overdue,
        overdue_window=schedule.window_key(overdue, spec.key),
    )
    return Span(
        expectation,
        since=max(_utc(occurrence), _utc(overdue) + deadline),
        until=min(_utc(following), _utc(after_overdue) + deadline),
    )


SpecKey = tuple[str, str, str, float]


def spec_key(spec: JobSpec) -> SpecKey:
    """What an expectation depends on: the schedule, zone, key format and deadline (jobs
    commonly share them)."""
    return (spec.schedule, spec.timezone, spec.key, spec.deadline_seconds)


@dataclass(frozen=True, slots=True)
class WindowFacts:
    """A window, and whether the holding that claimed it still holds its lease: asked only of a
    window not completed (false for a completed one, which is neither running nor interrupted
    whoever holds the lease)."""

    window: Window
    lease_held: bool

    @property
    def completed(self) -> bool:
        return self.window.completed_at is not None

    @property
    def running(self) -> bool:
        return self.window.completed_at is None and self.lease_held


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What the database says about a job's runs."""

    # Windows by key, when they exist: the expected occurrence's, the overdue one's when read for
    # alerts (`job_alerts`), and any other named.
    windows: Mapping[str, WindowFacts] = field(default_factory=dict)
    last_completed: Window | None = None
    last_started: WindowFacts | None = None


@dataclass(frozen=True, slots=True)
class JobStatus:
    job: str
    status: JobState
    expectation: Expectation
    last_completed_window: str | None
    last_completed_at: datetime | None
    last_duration_seconds: float | None
    running_window: str | None
    running_for_seconds: float | None
    # The latest started window, when the run that claimed it died without completing it.
    interrupted_window: str | None
    # The last run took more than half the interval: overlap is no longer hypothetical.
    slow: bool


def run_seconds(window: Window, until: datetime) -> float:
    end = window.completed_at if window.completed_at is not None else until
    return max(0.0, (_utc(end) - _utc(window.started_at)).total_seconds())


def running_window(facts: JobFacts) -> WindowFacts | None:
    """The run in progress: the latest started window, if its holding still holds the lease."""
    started = facts.last_started
    return started if started is not None and started.running else None


def interrupted_window(facts: JobFacts) -> str | None:
    """The latest started window's key, if the run that claimed it died before completing it."""
    started = facts.last_started
    return started.window.window if started is not None and started.window.interrupted else None


def overrunning(job: Job, facts: JobFacts, now: datetime) -> bool:
    running = running_window(facts)
    limit = job.spec.max_runtime_seconds
    return running is not None and limit is not None and run_seconds(running.window, now) > limit


def is_due(job: Job, occurrence: datetime, window: WindowFacts | None) -> bool:
    """An occurrence counts once it was claimed, or when it came after the schedule took effect
    (a job registered at 10:00 is not late for 00:05 that morning)."""
    return window is not None or _utc(occurrence) >= _utc(job.active_since)


def job_status(job: Job, expectation: Expectation, facts: JobFacts, now: datetime) -> JobStatus:
    current = facts.windows.get(expectation.window)
    running = running_window(facts)
    due = is_due(job, expectation.occurrence, current)
    state: JobState
    if overrunning(job, facts, now):
        state = "overrunning"
    elif current is not None and current.completed:
        state = "ok"
    elif due and _utc(now) >= expectation.deadline:
        state = "missed"
    elif running is not None:
        state = "running"
    elif due:
        state = "late"
    else:
        state = "ok" if facts.last_completed is not None else "new"
    last = facts.last_completed
    duration = None if last is None else run_seconds(last, now)
    return JobStatus(
        job=job.name,
        status=state,
        expectation=expectation,
        last_completed_window=None if last is None else last.window,
        last_completed_at=None if last is None else last.completed_at,
        last_duration_seconds=duration,
        running_window=None if running is None else running.window.window,
        running_for_seconds=None if running is None else run_seconds(running.window, now),
        interrupted_window=interrupted_window(facts),
        slow=duration is not None and duration > expectation.interval_seconds / 2,
    )


@dataclass(frozen=True, slots=True)
class LeaseView:
    """What monitoring needs of a lease (a narrower view than `Lease`)."""

    name: str
    holder: str
    generation: int
    acquired_at: datetime
    expires_at: datetime
    held: bool
    expires_in_seconds: float


@dataclass(frozen=True, slots=True)
class LeaseAge:
    """A lease, how long its generation has been held, and the bound past which it is stuck."""

    lease: LeaseView
    held_for_seconds: float
    bound_seconds: float

    @property
    def stuck(self) -> bool:
        return self.lease.held and self.held_for_seconds > self.bound_seconds


def lease_age(
    lease: LeaseView, now: datetime, default_bound: float, job_max_runtime: float | None
) -> LeaseAge:
    """One generation held longer than the job's `max_runtime_seconds` (when a job runs under this
    lease), else longer than `default_bound`, is stuck: its holder is alive but not finishing."""
    held_for = max(0.0, (_utc(now) - _utc(lease.acquired_at)).total_seconds())
    bound = default_bound if job_max_runtime is None else job_max_runtime
    return LeaseAge(lease, held_for if lease.held else 0.0, bound)
