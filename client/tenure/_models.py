"""What the service answers, as frozen dataclasses parsed from its JSON.

Parsing is strict: a missing field or a value of the wrong type raises `ValueError`, which the
protocol layer turns into `UnexpectedResponse`. Datetimes are timezone-aware, parsed from the
ISO 8601 strings the service sends. Times of the service's clock (`expires_at`, …) are for
people and logs; decide with `held` and `expires_in_seconds`, never by comparing wall clocks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from tenure._errors import TenureError

if TYPE_CHECKING:
    from tenure.schedule import KeyFormat

__all__ = [
    "DEFAULT_DEADLINE",
    "Alert",
    "Fence",
    "FenceRefusal",
    "Job",
    "JobSpec",
    "JobStatus",
    "Lease",
    "LeaseStatus",
    "NotableEvent",
    "Overview",
    "Page",
    "Renewals",
    "Verifications",
    "Window",
]

T = TypeVar("T")


def _field(data: Mapping[str, Any], key: str, kind: type[T]) -> T:
    if key not in data:
        raise ValueError(f"missing field {key!r}")
    value = data[key]
    # bool is an int subclass; no field here is a bool unless declared so.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"field {key!r} is not a {kind.__name__}: {value!r}")
    return value


def _number(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"field {key!r} is not a number: {value!r}")
    return float(value)


def _moment(data: Mapping[str, Any], key: str) -> datetime:
    text = _field(data, key, str)
    moment = datetime.fromisoformat(text)  # raises ValueError on a malformed value
    if moment.tzinfo is None:
        raise ValueError(f"field {key!r} has no time zone: {text!r}")
    return moment


def _optional_moment(data: Mapping[str, Any], key: str) -> datetime | None:
    return None if data.get(key) is None else _moment(data, key)


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
            name=_field(data, "name", str),
            holder=_field(data, "holder", str),
            generation=_field(data, "generation", int),
            ttl_seconds=_number(data, "ttl_seconds"),
            acquired_at=_moment(data, "acquired_at"),
            renewed_at=_moment(data, "renewed_at"),
            expires_at=_moment(data, "expires_at"),
            held=_field(data, "held", bool),
            expires_in_seconds=_number(data, "expires_in_seconds"),
            grant=_optional_str(data, "grant"),
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

    @property
    def completed(self) -> bool:
        return self.completed_at is not None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Window:
        status = _field(data, "status", str)
        if status not in ("running", "completed"):
            raise ValueError(f"field 'status' is not running or completed: {status!r}")
        return cls(
            job=_field(data, "job", str),
            window=_field(data, "window", str),
            lease=_field(data, "lease", str),
            holder=_field(data, "holder", str),
            generation=_field(data, "generation", int),
            attempt=_field(data, "attempt", int),
            started_at=_moment(data, "started_at"),
            completed_at=_optional_moment(data, "completed_at"),
            status="running" if status == "running" else "completed",
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
            resource=_field(data, "resource", str),
            lease=_field(data, "lease", str),
            highest=_field(data, "highest", int),
            updated_at=_moment(data, "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; pass `next_cursor` back for the next page (None: last page)."""

    items: tuple[T, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], item: Callable[[Mapping[str, Any]], T]) -> Page[T]:
        items = _field(data, "items", list)
        cursor = data.get("next_cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise ValueError(f"field 'next_cursor' is not a string: {cursor!r}")
        return cls(items=tuple(item(_mapping(entry)) for entry in items), next_cursor=cursor)


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
        refused = [_mapping(entry) for entry in _field(data, "refused", list)]
        return cls(
            accepted=tuple(
                Fence.from_json(_mapping(entry)) for entry in _field(data, "accepted", list)
            ),
            refused=tuple(
                FenceRefusal(
                    resource=_field(entry, "resource", str),
                    lease=_field(entry, "lease", str),
                    generation=_field(entry, "generation", int),
                    error=error(_mapping(_field(entry, "problem", dict))),
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
        renewed = _field(data, "renewed", list)
        return cls(
            renewed=tuple(Lease.from_json(_mapping(entry)) for entry in renewed),
            lost=_holdings(_field(data, "lost", list)),
            # Absent from services older than the field.
            undecided=_holdings(data.get("undecided", [])),
        )


def _holdings(entries: object) -> tuple[tuple[str, int], ...]:
    if not isinstance(entries, list):
        raise ValueError(f"expected a list, got {entries!r}")
    holdings = [_mapping(entry) for entry in entries]
    return tuple((_field(e, "name", str), _field(e, "generation", int)) for e in holdings)


def _mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {value!r}")
    return value


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


def _optional_number(data: Mapping[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else _number(data, key)


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else _field(data, key, str)


def _optional_int(data: Mapping[str, Any], key: str) -> int | None:
    return None if data.get(key) is None else _field(data, key, int)


@dataclass(frozen=True, slots=True)
class JobStatus:
    """A job's status by the service's clock: new, ok, running, late, missed or overrunning."""

    status: str
    window: str
    occurrence: datetime
    deadline: datetime
    next_occurrence: datetime
    interval_seconds: float
    last_completed_window: str | None
    last_completed_at: datetime | None
    last_duration_seconds: float | None
    running_window: str | None
    running_for_seconds: float | None
    duration_over_half_interval: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobStatus:
        return cls(
            status=_field(data, "status", str),
            window=_field(data, "window", str),
            occurrence=_moment(data, "occurrence"),
            deadline=_moment(data, "deadline"),
            next_occurrence=_moment(data, "next_occurrence"),
            interval_seconds=_number(data, "interval_seconds"),
            last_completed_window=_optional_str(data, "last_completed_window"),
            last_completed_at=_optional_moment(data, "last_completed_at"),
            last_duration_seconds=_optional_number(data, "last_duration_seconds"),
            running_window=_optional_str(data, "running_window"),
            running_for_seconds=_optional_number(data, "running_for_seconds"),
            duration_over_half_interval=_field(data, "duration_over_half_interval", bool),
        )


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
        key = _field(data, "key", str)
        if key not in ("occurrence", "date", "previous_day"):
            raise ValueError(f"field 'key' is not a key format: {key!r}")
        labels = _field(data, "labels", dict)
        spec = JobSpec(
            schedule=_field(data, "schedule", str),
            timezone=_field(data, "timezone", str),
            key=key,  # type: ignore[arg-type]  # checked just above
            deadline_seconds=_number(data, "deadline_seconds"),
            max_runtime_seconds=_optional_number(data, "max_runtime_seconds"),
            lease=_field(data, "lease", str),
            labels={str(k): str(v) for k, v in labels.items()},
        )
        return cls(
            name=_field(data, "name", str),
            spec=spec,
            created_at=_moment(data, "created_at"),
            updated_at=_moment(data, "updated_at"),
            active_since=_moment(data, "active_since"),
            status=JobStatus.from_json(_mapping(data.get("status"))),
        )


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """A lease in the overview: who holds it, for how long, and whether it is stuck."""

    name: str
    holder: str
    generation: int
    held: bool
    held_for_seconds: float
    expires_in_seconds: float
    stuck: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LeaseStatus:
        return cls(
            name=_field(data, "name", str),
            holder=_field(data, "holder", str),
            generation=_field(data, "generation", int),
            held=_field(data, "held", bool),
            held_for_seconds=_number(data, "held_for_seconds"),
            expires_in_seconds=_number(data, "expires_in_seconds"),
            stuck=_field(data, "stuck", bool),
        )


@dataclass(frozen=True, slots=True)
class Alert:
    """An open alert: `missed` / `overrunning` (a job's window) or `stuck` (a lease)."""

    kind: str
    subject: str
    window: str
    summary: str
    opened_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Alert:
        return cls(
            kind=_field(data, "kind", str),
            subject=_field(data, "subject", str),
            window=_field(data, "window", str),
            summary=_field(data, "summary", str),
            opened_at=_moment(data, "opened_at"),
        )


@dataclass(frozen=True, slots=True)
class NotableEvent:
    """A notable event: a takeover, a lost lease, a fence rejection, an alert."""

    at: datetime
    scope: str
    subject: str
    kind: str
    holder: str | None
    generation: int | None
    detail: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NotableEvent:
        return cls(
            at=_moment(data, "at"),
            scope=_field(data, "scope", str),
            subject=_field(data, "subject", str),
            kind=_field(data, "kind", str),
            holder=_optional_str(data, "holder"),
            generation=_optional_int(data, "generation"),
            detail=_optional_str(data, "detail"),
        )


@dataclass(frozen=True, slots=True)
class Overview:
    """What `tenure status` and the service's /ui show."""

    now: datetime
    jobs: tuple[Job, ...]
    leases: tuple[LeaseStatus, ...]
    alerts: tuple[Alert, ...]
    events: tuple[NotableEvent, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Overview:
        def each(key: str) -> list[Mapping[str, Any]]:
            return [_mapping(item) for item in _field(data, key, list)]

        return cls(
            now=_moment(data, "now"),
            jobs=tuple(Job.from_json(item) for item in each("jobs")),
            leases=tuple(LeaseStatus.from_json(item) for item in each("leases")),
            alerts=tuple(Alert.from_json(item) for item in each("alerts")),
            events=tuple(NotableEvent.from_json(item) for item in each("events")),
        )
