"""A job window (one occurrence of a job), when it may start, and why a claim or completion did
not go through."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import MAXYEAR, UTC, datetime
from typing import Literal

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


@dataclass(frozen=True, slots=True)
class Window:
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
class LeaseState:
    """What the explaining read found about the holding named: held by it, or bound to another
    principal."""

    held: bool
    foreign: bool = False


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


def claim_refusal(
    holding: Holding,
    window: Window | None,
    lease: LeaseState,
    job: str,
    key: str,
    not_due: NotDue | None = None,
) -> TenureError | None:
    """Why a claim wrote nothing; None when the state moved meanwhile (try again).

    A completed window is reported first: it is permanent, and it tells a late run to skip.
    A window not due yet comes next: no holding could claim it now.
    """
    if window is not None and window.completed_at is not None:
        return WindowCompleted(job, key, window.completed_at)
    if not_due is not None:
        return WindowNotDue(job, key, not_due.occurrence, not_due.now, not_due.tolerance)
    if window is not None and window.lease != holding.lease:
        return WindowLeaseMismatch(job, key, window.lease)
    if lease.foreign:
        return HoldingOfAnotherPrincipal(holding.lease)
    if not lease.held or (window is not None and window.generation > holding.generation):
        return LeaseLost(holding.lease, holding.generation)
    return None


def complete_outcome(
    holding: Holding, window: Window | None, lease: LeaseState, job: str, key: str
) -> Window | TenureError | None:
    """The answer to a completion that wrote nothing; None when the state moved meanwhile.

    Completing again what this holding completed returns the window with its original
    `completed_at`, so a client retrying after a lost response sees success.
    """
    mine = (
        window is not None
        and window.lease == holding.lease
        and window.holder == holding.holder
        and window.generation == holding.generation
    )
    if lease.foreign:
        return HoldingOfAnotherPrincipal(holding.lease)
    if window is not None and mine and window.completed_at is not None:
        return window
    if not lease.held:
        return LeaseLost(holding.lease, holding.generation)
    if window is None or not mine:
        if window is not None and window.completed_at is not None:
            return WindowCompleted(job, key, window.completed_at)
        return WindowNotClaimed(job, key)
    return None
