"""What the service answers, as frozen dataclasses parsed from its JSON.

Parsing is strict: a missing field or a value of the wrong type raises `ValueError`, which the
protocol layer turns into `UnexpectedResponse`. Datetimes are timezone-aware, parsed from the
ISO 8601 strings the service sends. Times of the service's clock (`expires_at`, …) are for
people and logs; decide with `held` and `expires_in_seconds`, never by comparing wall clocks.
The field readers are in `_fields`, the parts of the monitoring answers in `_monitoring`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from tenure._errors import TenureError
from tenure._fields import (
    holdings,
    mapping,
    moment,
    number,
    optional_moment,
    optional_number,
    optional_str,
    typed,
)
from tenure._monitoring import Alert, JobStatus, LeaseStatus, NotableEvent

if TYPE_CHECKING:
    from tenure.schedule import KeyFormat

__all__ = [
    "DEFAULT_DEADLINE",
    "Fence",
    "FenceRefusal",
    "Job",
    "JobSpec",
    "Lease",
    "Overview",
    "Page",
    "Renewals",
    "Resolution",
    "UnregisteredJob",
    "Verifications",
    "Window",
    "WindowState",
]

T = TypeVar("T")

WindowState = Literal["running", "interrupted", "completed"]
WINDOW_STATES: tuple[WindowState, ...] = ("running", "interrupted", "completed")


@dataclass(frozen=True, slots=True)
class Lease:
    """A named lease as the service last reported it. `held` is by the service's clock."""

    name: str
    holder: str
    generation: int
    ttl_seconds: float
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    held: bool
    expires_in_seconds: float
    # Names this acquire or renew; a release that sends it ends nothing if the holder was
    # granted the lease again after sending the release.
    grant: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Lease:
        return cls(
            name=typed(data, "name", str),
            holder=typed(data, "holder", str),
            generation=typed(data, "generation", int),
            ttl_seconds=number(data, "ttl_seconds"),
            acquired_at=moment(data, "acquired_at"),
            renewed_at=moment(data, "renewed_at"),
            expires_at=moment(data, "expires_at"),
            held=typed(data, "held", bool),
            expires_in_seconds=number(data, "expires_in_seconds"),
            grant=optional_str(data, "grant"),
        )


@dataclass(frozen=True, slots=True)
class Window:
    """One occurrence of a job: who claimed it, how many attempts, and whether it completed."""

    job: str
    window: str
    lease: str
    holder: str
    generation: int
    attempt: int
    started_at: datetime
    completed_at: datetime | None
    status: Literal["running", "completed"]
    # `status`, but `interrupted` once the run that claimed it no longer holds its lease without
    # having completed it (it died); a new claim makes it running again.
    state: WindowState = "running"

    @property
    def completed(self) -> bool:
        return self.completed_at is not None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Window:
        status = typed(data, "status", str)
        if status not in ("running", "completed"):
            raise ValueError(f"field 'status' is not running or completed: {status!r}")
        # Services older than the field send only `status`.
        state = data.get("state", status)
        if state not in WINDOW_STATES:
            raise ValueError(f"field 'state' is not one of {WINDOW_STATES}: {state!r}")
        return cls(
            job=typed(data, "job", str),
            window=typed(data, "window", str),
            lease=typed(data, "lease", str),
            holder=typed(data, "holder", str),
            generation=typed(data, "generation", int),
            attempt=typed(data, "attempt", int),
            started_at=moment(data, "started_at"),
            completed_at=optional_moment(data, "completed_at"),
            status="running" if status == "running" else "completed",
            state=state,
        )


@dataclass(frozen=True, slots=True)
class Resolution:
    """The window a schedule meant, as the service resolved it, and the service's clock (the
    database's) when it answered."""

    occurrence: datetime
    window: str
    next_occurrence: datetime
    now: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Resolution:
        return cls(
            occurrence=moment(data, "occurrence"),
            window=typed(data, "window", str),
            next_occurrence=moment(data, "next_occurrence"),
            now=moment(data, "now"),
        )


@dataclass(frozen=True, slots=True)
class Fence:
    """The highest generation of `lease` that `resource` has accepted."""

    resource: str
    lease: str
    highest: int
    updated_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fence:
        return cls(
            resource=typed(data, "resource", str),
            lease=typed(data, "lease", str),
            highest=typed(data, "highest", int),
            updated_at=moment(data, "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; pass `next_cursor` back for the next page (None: last page)."""

    items: tuple[T, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], item: Callable[[Mapping[str, Any]], T]) -> Page[T]:
        items = typed(data, "items", list)
        cursor = data.get("next_cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ValueError(f"field 'next_cursor' is not a string: {cursor!r}")
        return cls(items=tuple(item(mapping(entry)) for entry in items), next_cursor=cursor)


@dataclass(frozen=True, slots=True)
class FenceRefusal:
    """A verify a fence refused: do not write to `resource` with this generation. `error` is
    what a single verify would have raised (`StaleGeneration`, `FenceLeaseMismatch` or
    `UnknownGeneration`)."""

    resource: str
    lease: str
    generation: int
    error: TenureError


@dataclass(frozen=True, slots=True)
class Verifications:
    """What a batch verify did: the fences that accepted the generation, and the refusals."""

    accepted: tuple[Fence, ...]
    refused: tuple[FenceRefusal, ...]

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], error: Callable[[Mapping[str, Any]], TenureError]
    ) -> Verifications:
        """`error` makes the exception of a refusal's problem (the protocol layer's decoder)."""
        refused = [mapping(entry) for entry in typed(data, "refused", list)]
        return cls(
            accepted=tuple(
                Fence.from_json(mapping(entry)) for entry in typed(data, "accepted", list)
            ),
            refused=tuple(
                FenceRefusal(
                    resource=typed(entry, "resource", str),
                    lease=typed(entry, "lease", str),
                    generation=typed(entry, "generation", int),
                    error=error(mapping(typed(entry, "problem", dict))),
                )
                for entry in refused
            ),
        )


@dataclass(frozen=True, slots=True)
class Renewals:
    """What a batch renew did: the holdings renewed (each with its new expiry), the
    (name, generation) holdings that are no longer held — stop their work — and those left
    undecided (a fenced transaction kept the lease row locked): retry them."""

    renewed: tuple[Lease, ...]
    lost: tuple[tuple[str, int], ...]
    undecided: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Renewals:
        renewed = typed(data, "renewed", list)
        return cls(
            renewed=tuple(Lease.from_json(mapping(entry)) for entry in renewed),
            lost=holdings(typed(data, "lost", list)),
            # Absent from services older than the field.
            undecided=holdings(data.get("undecided", [])),
        )


# Jobs and the overview (monitoring by absence). --------------------------------------------

DEFAULT_DEADLINE = 3600.0


@dataclass(frozen=True, slots=True)
class JobSpec:
    """How a job is registered (`PUT /v1/jobs/{job}`): its schedule, how window keys are derived
    (as `resolve_window`), and how long after each occurrence its window must be completed.
    `lease` defaults to the job's name on the service, like `run_once`'s."""

    schedule: str
    timezone: str
    key: KeyFormat = "occurrence"
    deadline_seconds: float = DEFAULT_DEADLINE
    max_runtime_seconds: float | None = None
    lease: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "schedule": self.schedule,
            "timezone": self.timezone,
            "key": self.key,
            "deadline_seconds": self.deadline_seconds,
            "labels": dict(self.labels),
        }
        if self.max_runtime_seconds is not None:
            body["max_runtime_seconds"] = self.max_runtime_seconds
        if self.lease is not None:
            body["lease"] = self.lease
        return body


@dataclass(frozen=True, slots=True)
class Job:
    """A registered job and its status."""

    name: str
    spec: JobSpec
    created_at: datetime
    updated_at: datetime
    active_since: datetime
    status: JobStatus

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        key = typed(data, "key", str)
        if key not in ("occurrence", "date", "previous_day"):
            raise ValueError(f"field 'key' is not a key format: {key!r}")
        labels = typed(data, "labels", dict)
        spec = JobSpec(
            schedule=typed(data, "schedule", str),
            timezone=typed(data, "timezone", str),
            key=key,  # type: ignore[arg-type]  # checked just above
            deadline_seconds=number(data, "deadline_seconds"),
            max_runtime_seconds=optional_number(data, "max_runtime_seconds"),
            lease=typed(data, "lease", str),
            labels={str(k): str(v) for k, v in labels.items()},
        )
        return cls(
            name=typed(data, "name", str),
            spec=spec,
            created_at=moment(data, "created_at"),
            updated_at=moment(data, "updated_at"),
            active_since=moment(data, "active_since"),
            status=JobStatus.from_json(mapping(data.get("status"))),
        )


@dataclass(frozen=True, slots=True)
class UnregisteredJob:
    """A job that claimed windows but is not registered: no schedule, so no status (never late
    nor missed); its latest started and completed windows."""

    name: str
    last_started: Window | None
    last_completed: Window | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UnregisteredJob:
        def window(key: str) -> Window | None:
            value = data.get(key)
            return None if value is None else Window.from_json(mapping(value))

        return cls(
            name=typed(data, "name", str),
            last_started=window("last_started"),
            last_completed=window("last_completed"),
        )


@dataclass(frozen=True, slots=True)
class Overview:
    """What `tenure status` and the service's /ui show."""

    now: datetime
    jobs: tuple[Job, ...]
    leases: tuple[LeaseStatus, ...]
    alerts: tuple[Alert, ...]
    events: tuple[NotableEvent, ...]
    # Absent from services older than the field.
    unregistered_jobs: tuple[UnregisteredJob, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Overview:
        def each(key: str) -> list[Mapping[str, Any]]:
            return [mapping(item) for item in typed(data, key, list)]

        return cls(
            now=moment(data, "now"),
            jobs=tuple(Job.from_json(item) for item in each("jobs")),
            leases=tuple(LeaseStatus.from_json(item) for item in each("leases")),
            alerts=tuple(Alert.from_json(item) for item in each("alerts")),
            events=tuple(NotableEvent.from_json(item) for item in each("events")),
            unregistered_jobs=tuple(
                UnregisteredJob.from_json(mapping(item))
                for item in data.get("unregistered_jobs", [])
            ),
        )
