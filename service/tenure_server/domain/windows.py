"""A job window (one occurrence of a job), when it may start, and why a claim or completion did
not go through."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import MAXYEAR, UTC, datetime
from typing import Literal, NamedTuple

from tenure import schedule
from tenure.schedule import KeyFormat
from tenure_server.domain.errors import (
    HoldingOfAnotherPrincipal,
    LeaseLost,
    TenureError,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
    WindowNotDue,
)

WindowState = Literal["running", "interrupted", "completed"]


class Window(NamedTuple):
    """A named tuple, not a frozen dataclass (as `Lease`): the overview and a monitor pass build
    four per job, and a dataclass's __init__ costs twice a tuple's."""

    job: str
    window: str
    lease: str
    holder: str
    generation: int
    attempt: int
    started_at: datetime
    completed_at: datetime | None
    # Not completed, and the holding that claimed it no longer holds its lease (by the database
    # clock, when read): the run died. A new claim makes it running again.
    interrupted: bool = False

    @property
    def status(self) -> Literal["running", "completed"]:
        return "running" if self.completed_at is None else "completed"

    @property
    def state(self) -> WindowState:
        """`status`, telling a run that died from one in progress."""
        if self.completed_at is not None:
            return "completed"
        return "interrupted" if self.interrupted else "running"


@dataclass(frozen=True, slots=True)
class Holding:
    """Who asks: a holder of `lease` at `generation`, authenticated as `principal`."""

    lease: str
    holder: str
    generation: int
    principal: str | None = None


@dataclass(frozen=True, slots=True)
class Schedule:
    """The schedule of the job registered under a window's job name."""

    cron: str
    timezone: str
    key: KeyFormat


@dataclass(frozen=True, slots=True)
class Due:
    """When a window may start: `tolerance` seconds before `occurrence` by the database clock,
    or at any time when `occurrence` is None (no job is registered under its name, or its key
    is not one of the job's)."""

    occurrence: datetime | None
    tolerance: float


ANY_TIME = Due(None, 0.0)


def due(registered: Schedule | None, key: str, tolerance: float) -> Due:
    """When window `key` of a job with schedule `registered` (None: unregistered) may start."""
    if registered is None:
        return ANY_TIME
    occurrence = schedule.window_occurrence(
        registered.cron, registered.timezone, key, registered.key
    )
    return Due(None if occurrence is None else _instant(occurrence), tolerance)


def _instant(moment: datetime) -> datetime:
    """`moment` in UTC; a key near the limits of datetime ("0001-01-01T00:00+14:00") whose
    instant falls outside them is the earliest or latest instant there is."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return (datetime.max if moment.year == MAXYEAR else datetime.min).replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class NotDue:
    """What the explaining read found: the window's occurrence lay ahead of the database clock
    `now` by more than the tolerance."""

    occurrence: datetime
    now: datetime
    tolerance: float


@dataclass(frozen=True, slots=True)
class WindowFacts:
    """What the explaining read (explain_window) found after a claim or completion wrote
    nothing, each fact decided in SQL by the migration function the deciding statement called,
    so that nothing here restates a rule."""

    window: Window | None  # None: no such window
    holds: bool  # tenure_holds_v1: the holding named is its lease's current one
    foreign: bool  # the holding named exists, bound to another principal
    bound_elsewhere: bool  # the window is another lease's
    claimed_by_holding: bool  # tenure_claimed_by_v1: the holding named claimed the window
    may_claim: bool  # the whole claim decision: it would pass now
    may_complete: bool  # the whole completion decision: it would pass now
    not_due: NotDue | None = None  # the window's occurrence is still ahead


def claim_refusal(facts: WindowFacts, holding: Holding, job: str, key: str) -> TenureError | None:
    """Why a claim wrote nothing; None when it would pass now (the state moved meanwhile: decide
    again).

    A completed window is reported first: it is permanent, and it tells a late run to skip.
    A window not due yet comes next: no holding could claim it now.
    """
    window = facts.window
    if facts.may_claim:
        return None
    if window is not None and window.completed_at is not None:
        return WindowCompleted(job, key, window.completed_at)
    if facts.not_due is not None:
        return WindowNotDue(
            job, key, facts.not_due.occurrence, facts.not_due.now, facts.not_due.tolerance
        )
    if window is not None and facts.bound_elsewhere:
        return WindowLeaseMismatch(job, key, window.lease)
    if facts.foreign:
        return HoldingOfAnotherPrincipal(holding.lease)
    return LeaseLost(holding.lease, holding.generation)


def complete_outcome(
    facts: WindowFacts, holding: Holding, job: str, key: str
) -> Window | TenureError | None:
    """The answer to a completion that wrote nothing; None when it would pass now (the state
    moved meanwhile: decide again).

    Completing again what this holding completed returns the window with its original
    `completed_at`, so a client retrying after a lost response sees success.
    """
    window = facts.window
    if facts.may_complete:
        return None
    if facts.foreign:
        return HoldingOfAnotherPrincipal(holding.lease)
    if window is not None and facts.claimed_by_holding and window.completed_at is not None:
        return window
    if not facts.holds:
        return LeaseLost(holding.lease, holding.generation)
    if window is not None and window.completed_at is not None:
        return WindowCompleted(job, key, window.completed_at)
    return WindowNotClaimed(job, key)
