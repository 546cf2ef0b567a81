"""What the service answers, as frozen dataclasses parsed from its JSON.

Parsing is strict: a missing field or a value of the wrong type raises `ValueError`, which the
protocol layer turns into `UnexpectedResponse`. Datetimes are timezone-aware, parsed from the
ISO 8601 strings the service sends. Times of the service's clock (`expires_at`, …) are for
people and logs; decide with `held` and `expires_in_seconds`, never by comparing wall clocks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

__all__ = ["Fence", "Lease", "Page", "Window"]

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


def _mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {value!r}")
    return value
