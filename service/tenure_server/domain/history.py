"""Rows of the history the database keeps: lease events, job events, and the notable events an
operator looks at first (takeovers, lost leases, fence rejections, alerts)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tenure_server.domain.errors import InvalidInput
from tenure_server.domain.names import decode_cursor


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    id: int
    lease: str
    kind: str
    holder: str
    generation: int
    previous_holder: str | None
    previous_generation: int | None
    at: datetime


@dataclass(frozen=True, slots=True)
class JobRecord:
    id: int
    job: str
    kind: str
    window: str | None
    lease: str | None
    holder: str | None
    generation: int | None
    attempt: int | None
    detail: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class NotableEvent:
    """One line of "recent events": `scope` is lease, fence or alert; `subject` its name;
    `lease` a fence rejection's lease (a reader must own it too, as for the stream)."""

    at: datetime
    scope: str
    subject: str
    kind: str
    holder: str | None
    generation: int | None
    detail: str | None
    lease: str | None = None


def event_cursor(cursor: str | None) -> int | None:
    """Event listings page by id, newest first: the cursor holds the last id handed out."""
    after = decode_cursor(cursor)
    if after is None:
        return None
    if not after.isdigit() or len(after) > 19:
        raise InvalidInput("cursor", "is not a cursor this service handed out")
    return int(after)
