"""Wire schemas of job definitions, statuses, history and the overview (issue 6)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from tenure.schedule import KeyFormat
from tenure_server.api.schemas import WindowOut, json_response
from tenure_server.app.status import Evaluated, Overview, Unregistered
from tenure_server.domain.alerts import OpenAlert
from tenure_server.domain.history import JobRecord, LeaseRecord, NotableEvent
from tenure_server.domain.jobs import DEFAULT_DEADLINE_SECONDS, MAX_SECONDS, JobSpec
from tenure_server.domain.names import NAME_MAX_LENGTH, NAME_PATTERN
from tenure_server.domain.status import JobState, LeaseAge

Positive = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]


class JobPut(BaseModel):
    """A job definition: its schedule and how long after each occurrence it must be done."""

    model_config = ConfigDict(extra="forbid", strict=True)

    schedule: str = Field(max_length=200, description="Five-field cron expression.")
    timezone: str = Field(max_length=64, description="IANA time zone of the schedule.")
    key: KeyFormat = Field(
        default="occurrence",
        description="How window keys are derived: occurrence, date or previous_day (as the SDK).",
    )
    lease: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        max_length=NAME_MAX_LENGTH,
        description="The lease the job runs under (default: the job's name).",
    )
    deadline_seconds: Positive = Field(
        default=DEFAULT_DEADLINE_SECONDS,
        description="The window must be completed this long after its occurrence.",
    )
    max_runtime_seconds: Positive | None = Field(
        default=None, description="A run longer than this is overrunning (and its lease stuck)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="At most 20 labels.")

    def spec(self, job: str) -> JobSpec:
        return JobSpec(
            schedule=self.schedule,
            timezone=self.timezone,
            key=self.key,
            lease=self.lease or job,
            deadline_seconds=self.deadline_seconds,
            max_runtime_seconds=self.max_runtime_seconds,
            labels=self.labels,
        )


class JobStatusOut(BaseModel):
    status: JobState
    window: str = Field(description="Window key of the current occurrence.")
    occurrence: datetime = Field(description="The current (latest due) occurrence.")
    deadline: datetime = Field(description="When the current window must be completed.")
    next_occurrence: datetime
    interval_seconds: float
    last_completed_window: str | None
    last_completed_at: datetime | None
    last_duration_seconds: float | None
    running_window: str | None
    running_for_seconds: float | None
    interrupted_window: str | None = Field(
        description="The latest started window, when the run that claimed it no longer holds "
        "its lease and did not complete it (it died); null once a run resumes or completes it."
    )
    duration_over_half_interval: bool = Field(
        description="The last run took more than half the interval: overlap is no longer "
        "hypothetical."
    )


class JobOut(BaseModel):
    name: str
    registered: Literal[True] = Field(
        default=True, description="Always true: the job has a schedule (see UnregisteredJobOut)."
    )
    schedule: str
    timezone: str
    key: KeyFormat
    lease: str
    deadline_seconds: float
    max_runtime_seconds: float | None
    labels: dict[str, str]
    created_at: datetime
    updated_at: datetime
    active_since: datetime = Field(description="Occurrences before this are never missed.")
    status: JobStatusOut

    @classmethod
    def of(cls, item: Evaluated) -> JobOut:
        return cls(**job_fields(item))


def job_fields(item: Evaluated) -> dict[str, Any]:
    """What a JobOut shows of a job and its status: the model's fields, or its JSON when encoded
    by orjson (the overview renders a thousand without building one: `overview_json`)."""
    job, spec, status, expected = item.job, item.job.spec, item.status, item.status.expectation
    return {
        "name": job.name,
        "registered": True,
        "schedule": spec.schedule,
        "timezone": spec.timezone,
        "key": spec.key,
        "lease": spec.lease,
        "deadline_seconds": float(spec.deadline_seconds),
        "max_runtime_seconds": _float(spec.max_runtime_seconds),
        "labels": dict(spec.labels),
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "active_since": job.active_since,
        "status": {
            "status": status.status,
            "window": expected.window,
            "occurrence": expected.occurrence,
            "deadline": expected.deadline,
            "next_occurrence": expected.next_occurrence,
            "interval_seconds": float(expected.interval_seconds),
            "last_completed_window": status.last_completed_window,
            "last_completed_at": status.last_completed_at,
            "last_duration_seconds": _float(status.last_duration_seconds),
            "running_window": status.running_window,
            "running_for_seconds": _float(status.running_for_seconds),
            "interrupted_window": status.interrupted_window,
            "duration_over_half_interval": status.slow,
        },
    }


def _float(value: float | None) -> float | None:
    """As pydantic writes a float field: 3600.0 for 3600."""
    return None if value is None else float(value)


class UnregisteredJobOut(BaseModel):
    """A job that claimed windows but is not registered (never, or deleted since): without a
    schedule there is no status, late or missed; only its latest windows."""

    name: str
    registered: Literal[False] = False
    last_started: WindowOut | None = Field(
        description="The window started last; `state` says whether its run is still going."
    )
    last_completed: WindowOut | None = Field(description="The window completed last.")
    interrupted_window: str | None = Field(
        description="The window started last, when its run died before completing it."
    )

    @classmethod
    def of(cls, item: Unregistered) -> UnregisteredJobOut:
        facts = item.facts
        started, completed = facts.last_started, facts.last_completed
        return cls(
            name=item.name,
            last_started=None if started is None else WindowOut.of(started.window),
            last_completed=None if completed is None else WindowOut.of(completed),
            interrupted_window=item.interrupted_window,
        )


class JobPage(BaseModel):
    items: list[JobOut | UnregisteredJobOut] = Field(
        description="Registered jobs; with `unregistered=true`, also those that only ran "
        "(`registered: false`), merged in name order."
    )
    next_cursor: str | None


class JobEventOut(BaseModel):
    id: int
    job: str
    kind: Literal[
        "registered",
        "updated",
        "deleted",
        "claimed",
        "completed",
        "alert_opened",
        "alert_resolved",
    ]
    window: str | None
    lease: str | None
    holder: str | None
    generation: int | None
    attempt: int | None
    detail: str | None
    at: datetime

    @classmethod
    def of(cls, record: JobRecord) -> JobEventOut:
        return cls.model_validate(record, from_attributes=True)


class LeaseEventOut(BaseModel):
    id: int
    lease: str
    kind: str = Field(description="acquired, taken_over, released, renew_refused, …")
    holder: str
    generation: int
    previous_holder: str | None
    previous_generation: int | None
    at: datetime

    @classmethod
    def of(cls, record: LeaseRecord) -> LeaseEventOut:
        return cls.model_validate(record, from_attributes=True)


class JobEventPage(BaseModel):
    items: list[JobEventOut]
    next_cursor: str | None


class LeaseEventPage(BaseModel):
    items: list[LeaseEventOut]
    next_cursor: str | None


class LeaseAgeOut(BaseModel):
    name: str
    holder: str
    generation: int
    held: bool
    acquired_at: datetime
    expires_at: datetime
    held_for_seconds: float
    expires_in_seconds: float
    stuck_after_seconds: float
    stuck: bool

    @classmethod
    def of(cls, age: LeaseAge) -> LeaseAgeOut:
        return cls(**lease_age_fields(age))


def lease_age_fields(age: LeaseAge) -> dict[str, Any]:
    """What a LeaseAgeOut shows of a lease's age (as `job_fields`)."""
    lease = age.lease
    return {
        "name": lease.name,
        "holder": lease.holder,
        "generation": lease.generation,
        "held": lease.held,
        "acquired_at": lease.acquired_at,
        "expires_at": lease.expires_at,
        "held_for_seconds": float(age.held_for_seconds),
        "expires_in_seconds": float(lease.expires_in_seconds),
        "stuck_after_seconds": float(age.bound_seconds),
        "stuck": age.stuck,
    }


class AlertOut(BaseModel):
    kind: Literal["missed", "overrunning", "stuck"]
    subject: str = Field(description="The job (missed, overrunning) or the lease (stuck).")
    window: str = Field(description="The window key; for a stuck lease, its generation.")
    summary: str
    opened_at: datetime

    @classmethod
    def of(cls, item: OpenAlert) -> AlertOut:
        return cls(**alert_fields(item))


def alert_fields(item: OpenAlert) -> dict[str, Any]:
    """What an AlertOut shows of an open alert (as `job_fields`: a missed job has one each)."""
    alert = item.alert
    return {
        "kind": alert.kind,
        "subject": alert.subject,
        "window": alert.window,
        "summary": alert.summary,
        "opened_at": item.opened_at,
    }


class NotableEventOut(BaseModel):
    at: datetime
    scope: Literal["lease", "fence", "alert"]
    subject: str
    kind: str
    holder: str | None
    generation: int | None
    detail: str | None

    @classmethod
    def of(cls, event: NotableEvent) -> NotableEventOut:
        return cls.model_validate(event, from_attributes=True)


class OverviewOut(BaseModel):
    """What `GET /ui` and `tenure status` show: jobs, leases, open alerts and notable events."""

    now: datetime = Field(description="The database clock when this was read.")
    jobs: list[JobOut]
    leases: list[LeaseAgeOut]
    alerts: list[AlertOut]
    events: list[NotableEventOut]
    unregistered_jobs: list[UnregisteredJobOut] = Field(
        description="Jobs that claimed windows but are not registered, in name order (at most "
        "500): register them for a status, late and missed alerts."
    )

    @classmethod
    def of(cls, overview: Overview) -> OverviewOut:
        return cls(
            now=overview.now,
            jobs=[JobOut.of(item) for item in overview.jobs],
            leases=[LeaseAgeOut.of(age) for age in overview.leases],
            alerts=[AlertOut.of(alert) for alert in overview.alerts],
            events=[NotableEventOut.of(event) for event in overview.events],
            unregistered_jobs=[UnregisteredJobOut.of(item) for item in overview.unregistered],
        )


def overview_json(overview: Overview) -> Response:
    """The JSON of `OverviewOut.of(overview)`, its jobs and leases encoded by orjson from their
    fields: validating and serializing a model per job was most of the overview's CPU after the
    statuses (bench/README.md, "How the cost grows with use"); open alerts likewise. The few
    events and unregistered jobs go through their models (`tests/unit/test_schemas.py`)."""
    return json_response(
        {
            "now": overview.now,
            "jobs": [job_fields(item) for item in overview.jobs],
            "leases": [lease_age_fields(age) for age in overview.leases],
            "alerts": [alert_fields(alert) for alert in overview.alerts],
            "events": [_dumped(NotableEventOut.of(event)) for event in overview.events],
            "unregistered_jobs": [unregistered_fields(item) for item in overview.unregistered],
        }
    )


def unregistered_fields(item: Unregistered) -> dict[str, Any]:
    """An UnregisteredJobOut's JSON values, to be encoded with `job_fields`' (few: no fast path)."""
    return _dumped(UnregisteredJobOut.of(item))


def _dumped(model: BaseModel) -> dict[str, Any]:
    """A model's JSON values (strings for datetimes), to be encoded with the rest."""
    return model.model_dump(mode="json")
