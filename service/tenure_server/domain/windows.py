"""A job window (one occurrence of a job) and why a claim or completion did not go through."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tenure_server.domain.errors import (
    HoldingOfAnotherPrincipal,
    LeaseLost,
    TenureError,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
)


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

    @property
    def status(self) -> Literal["running", "completed"]:
        return "running" if self.completed_at is None else "completed"


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


def claim_refusal(
    holding: Holding, window: Window | None, lease: LeaseState, job: str, key: str
) -> TenureError | None:
    """Why a claim wrote nothing; None when the state moved meanwhile (try again).

    A completed window is reported first: it is permanent, and it tells a late run to skip.
    """
    if window is not None and window.completed_at is not None:
        return WindowCompleted(job, key, window.completed_at)
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
