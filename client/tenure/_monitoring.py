"""The parts of the monitoring answers (`Job`, `Overview`): a job's status, a lease as the
overview shows it, an open alert, a notable event. Times are by the service's clock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tenure._fields import (
    moment,
    number,
    optional_int,
    optional_moment,
    optional_number,
    optional_str,
    typed,
)

__all__ = ["Alert", "JobStatus", "LeaseStatus", "NotableEvent"]


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
    # The latest started window, when its run died before completing it (absent from services
    # older than the field: None).
    interrupted_window: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobStatus:
        return cls(
            status=typed(data, "status", str),
            window=typed(data, "window", str),
            occurrence=moment(data, "occurrence"),
            deadline=moment(data, "deadline"),
            next_occurrence=moment(data, "next_occurrence"),
            interval_seconds=number(data, "interval_seconds"),
            last_completed_window=optional_str(data, "last_completed_window"),
            last_completed_at=optional_moment(data, "last_completed_at"),
            last_duration_seconds=optional_number(data, "last_duration_seconds"),
            running_window=optional_str(data, "running_window"),
            running_for_seconds=optional_number(data, "running_for_seconds"),
            duration_over_half_interval=typed(data, "duration_over_half_interval", bool),
            interrupted_window=optional_str(data, "interrupted_window"),
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
            name=typed(data, "name", str),
            holder=typed(data, "holder", str),
            generation=typed(data, "generation", int),
            held=typed(data, "held", bool),
            held_for_seconds=number(data, "held_for_seconds"),
            expires_in_seconds=number(data, "expires_in_seconds"),
            stuck=typed(data, "stuck", bool),
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
            kind=typed(data, "kind", str),
            subject=typed(data, "subject", str),
            window=typed(data, "window", str),
            summary=typed(data, "summary", str),
            opened_at=moment(data, "opened_at"),
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
            at=moment(data, "at"),
            scope=typed(data, "scope", str),
            subject=typed(data, "subject", str),
            kind=typed(data, "kind", str),
            holder=optional_str(data, "holder"),
            generation=optional_int(data, "generation"),
            detail=optional_str(data, "detail"),
        )
