"""A job definition: its schedule (the SDK's window arithmetic, `tenure.schedule`), how long after
an occurrence its window must be completed, and how long a run may take."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tenure import schedule
from tenure.schedule import KeyFormat
from tenure_server.domain.errors import InvalidInput

KEY_FORMATS: tuple[KeyFormat, ...] = ("occurrence", "date", "previous_day")
# A deadline or a run longer than a month is not something a cron monitor can watch usefully.
MAX_SECONDS = 31 * 24 * 3600.0
DEFAULT_DEADLINE_SECONDS = 3600.0
MAX_LABELS = 20
LABEL_KEY = re.compile(r"[a-z][a-z0-9_]{0,62}")
LABEL_VALUE_MAX_LENGTH = 200


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a caller registers; checked by `check_spec`."""

    schedule: str
    timezone: str
    key: KeyFormat
    lease: str
    deadline_seconds: float
    max_runtime_seconds: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Job:
    """A registered job. `active_since`: when its current schedule took effect; occurrences
    before it are never reported missed."""

    name: str
    spec: JobSpec
    created_at: datetime
    updated_at: datetime
    active_since: datetime


def check_spec(spec: JobSpec, now: datetime) -> JobSpec:
    """Return `spec` if it describes a job that can be monitored; else raise `InvalidInput`."""
    try:
        schedule.check_cron(spec.schedule)
    except ValueError as error:
        raise InvalidInput("schedule", str(error)) from None
    try:
        schedule.check_timezone(spec.timezone)
    except ValueError as error:
        raise InvalidInput("timezone", str(error)) from None
    if spec.key not in KEY_FORMATS:
        raise InvalidInput("key", f"must be one of {', '.join(KEY_FORMATS)}")
    try:
        # A schedule that never fires (30 February) cannot have a status.
        schedule.scheduled_occurrence(spec.schedule, spec.timezone, now)
        schedule.next_occurrence(spec.schedule, spec.timezone, now)
    except ValueError as error:
        raise InvalidInput("schedule", str(error)) from None
    _check_seconds("deadline_seconds", spec.deadline_seconds)
    if spec.max_runtime_seconds is not None:
        _check_seconds("max_runtime_seconds", spec.max_runtime_seconds)
    _check_labels(spec.labels)
    return spec


def _check_seconds(name: str, value: float) -> None:
    if not 0 < value <= MAX_SECONDS:
        raise InvalidInput(name, f"must be more than 0 and at most {MAX_SECONDS:g} seconds")


def _check_labels(labels: Mapping[str, str]) -> None:
    if len(labels) > MAX_LABELS:
        raise InvalidInput("labels", f"at most {MAX_LABELS} labels")
    for key, value in labels.items():
        if not LABEL_KEY.fullmatch(key):
            raise InvalidInput("labels", f"{key!r}: keys are lower-case words ([a-z][a-z0-9_]*)")
        if len(value) > LABEL_VALUE_MAX_LENGTH or not value.isprintable():
            raise InvalidInput(
                "labels", f"{key!r}: values are at most {LABEL_VALUE_MAX_LENGTH} printable chars"
            )
