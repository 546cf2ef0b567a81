"""What happened: one record per lease transition, window claim or completion, fence decision and
alert transition, and the sink that turns each into a log line and a metric.

The operations report events to an `EventSink`; the service's sink writes structured logs and
Prometheus counters (`adapters/telemetry.py`). The history kept in the database is written by
the deciding SQL statements themselves, not through the sink.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)
from tenure_server.domain.windows import Window

LeaseEventKind = Literal[
    "acquired", "taken_over", "released", "renew_refused", "refused", "force_released"
]
WindowEventKind = Literal["claimed", "completed"]
FenceRejection = Literal["stale_generation", "unknown_generation", "lease_mismatch"]
FENCE_REJECTIONS: tuple[FenceRejection, ...] = get_args(FenceRejection)
AlertTransition = Literal["opened", "resolved"]


@dataclass(frozen=True, slots=True)
class LeaseEvent:
    """A lease changed hands, was released, or a holder was refused (`refused`: lease-held,
    a skipped run; `renew_refused`: a lost lease; `force_released`: an operator, `actor`, moved
    the lease past `previous_holder`'s generation)."""

    kind: LeaseEventKind
    lease: str
    holder: str
    generation: int | None
    previous_holder: str | None = None
    previous_generation: int | None = None
    actor: str | None = None

    @property
    def name(self) -> str:
        return f"lease.{self.kind}"


@dataclass(frozen=True, slots=True)
class WindowEvent:
    kind: WindowEventKind
    job: str
    window: str
    lease: str
    holder: str
    generation: int
    attempt: int
    duration_seconds: float | None = None

    @property
    def name(self) -> str:
        return f"window.{self.kind}"


@dataclass(frozen=True, slots=True)
class FenceEvent:
    """A fence accepted a generation (`rejection` None) or refused it, and why."""

    resource: str
    lease: str
    generation: int
    rejection: FenceRejection | None = None
    highest: int | None = None

    @property
    def name(self) -> str:
        return "fence.accepted" if self.rejection is None else "fence.rejected"


@dataclass(frozen=True, slots=True)
class AlertEvent:
    transition: AlertTransition
    kind: str
    subject: str
    window: str
    summary: str

    @property
    def name(self) -> str:
        return f"alert.{self.transition}"


Event = LeaseEvent | WindowEvent | FenceEvent | AlertEvent


class EventSink(Protocol):
    """Receives every event as it happens; must not block and must not raise."""

    def record(self, event: Event) -> None: ...


class NoSink:
    """Drops events (tools and tests that build `Operations` without telemetry)."""

    def record(self, event: Event) -> None:
        return None


def window_event(kind: WindowEventKind, window: Window) -> WindowEvent:
    duration = None
    if kind == "completed" and window.completed_at is not None:
        duration = max(0.0, (window.completed_at - window.started_at).total_seconds())
    return WindowEvent(
        kind,
        window.job,
        window.window,
        window.lease,
        window.holder,
        window.generation,
        window.attempt,
        duration,
    )


def fence_rejection(
    resource: str, lease: str, generation: int, refusal: TenureError
) -> FenceEvent | None:
    """The event of a refused verify, or None for a refusal that is not the fence's decision."""
    if isinstance(refusal, StaleGeneration):
        return FenceEvent(resource, lease, generation, "stale_generation", refusal.highest)
    if isinstance(refusal, UnknownGeneration):
        return FenceEvent(resource, lease, generation, "unknown_generation", refusal.current)
    if isinstance(refusal, FenceLeaseMismatch):
        return FenceEvent(resource, lease, generation, "lease_mismatch")
    return None
