"""Strict readers of one field of the service's JSON: a missing field or a value of the wrong
type raises `ValueError` (which the protocol layer turns into `UnexpectedResponse`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

__all__ = [
    "holdings",
    "mapping",
    "moment",
    "number",
    "optional_int",
    "optional_moment",
    "optional_number",
    "optional_str",
    "typed",
]

T = TypeVar("T")


def typed(data: Mapping[str, Any], key: str, kind: type[T]) -> T:
    if key not in data:
        raise ValueError(f"missing field {key!r}")
    value = data[key]
    # bool is an int subclass; no field here is a bool unless declared so.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"field {key!r} is not a {kind.__name__}: {value!r}")
    return value


def number(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"field {key!r} is not a number: {value!r}")
    return float(value)


def moment(data: Mapping[str, Any], key: str) -> datetime:
    text = typed(data, key, str)
    value = datetime.fromisoformat(text)  # raises ValueError on a malformed value
    if value.tzinfo is None:
        raise ValueError(f"field {key!r} has no time zone: {text!r}")
    return value


def optional_moment(data: Mapping[str, Any], key: str) -> datetime | None:
    return None if data.get(key) is None else moment(data, key)


def holdings(entries: object) -> tuple[tuple[str, int], ...]:
    if not isinstance(entries, list):
        raise ValueError(f"expected a list, got {entries!r}")
    items = [mapping(entry) for entry in entries]
    return tuple((typed(e, "name", str), typed(e, "generation", int)) for e in items)


def mapping(value: object) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {value!r}")
    return value


def optional_number(data: Mapping[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else number(data, key)


def optional_str(data: Mapping[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else typed(data, key, str)


def optional_int(data: Mapping[str, Any], key: str) -> int | None:
    return None if data.get(key) is None else typed(data, key, int)
