"""What happened: one record per lease transition, window claim or completion, fence decision and
alert transition, the sink that turns each into a log line and a metric, and `CATALOGUE`, the one
table of event types.

The operations report events to an `EventSink`; the service's sink writes structured logs and
Prometheus counters (`tenure_server.adapters.telemetry`), and the live stream publishes some of them
(`tenure_server.app.stream_wire`). Both read what to do with each type from `CATALOGUE`, as do
/ui's script (handed the streamed names) and the client's `tenure status --watch` (its
`tenure/_event_types.py` is generated from it by scripts/generate_event_types.py). Adding an
event type is one entry there and the code that emits it; tests/unit/test_event_catalogue.py
fails on a type some reader does not handle. The history kept in the database is written by the
deciding SQL statements themselves, not through the sink.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol, get_args

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
FenceOutcome = Literal["accepted", "rejected"]


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


class FenceEvent(NamedTuple):
    """A fence accepted a generation (`rejection` None) or refused it, and why. A named tuple,
    as `Fence` is: a batch verify records one per accepted verify, and a frozen dataclass of
    five fields cost 1.2 µs to build against 0.5 (bench/README.md, step 26)."""

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
EventFamilyName = Literal["lease", "window", "fence", "alert"]


@dataclass(frozen=True, slots=True)
class Count:
    """A metric an event adds to: its counter, by one, or with `observe` its histogram, by that
    attribute's value when it has one. `labels` are the metric's label names, each read from the
    event's attribute of that name (or the one its family renames it from)."""

    metric: str
    labels: tuple[str, ...]
    observe: str | None = None


@dataclass(frozen=True, slots=True)
class EventFamily:
    """The events of one class, named `<family>.<kind>` for each of its `kinds`. `names`: the
    data fields a stream filters it by (a reader must own each), the first naming what it is
    about; `metric_name`: the label of the bounded name its metrics are by, started at zero when
    first seen (None: its metrics are by no name); `renamed`: data fields and metric labels read
    from another attribute."""

    name: EventFamilyName
    cls: type[Event]
    kinds: tuple[str, ...]
    names: tuple[str, ...]
    metric_name: str | None
    renamed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def attribute(self, data_field: str) -> str:
        return self.renamed.get(data_field, data_field)


LEASE = EventFamily("lease", LeaseEvent, get_args(LeaseEventKind), ("lease",), "lease")
WINDOW = EventFamily("window", WindowEvent, get_args(WindowEventKind), ("job",), "job")
# Both names, as verify requires both: a reader of only one of them sees nothing.
FENCE = EventFamily(
    "fence",
    FenceEvent,
    get_args(FenceOutcome),
    ("resource", "lease"),
    "lease",
    MappingProxyType({"reason": "rejection"}),
)
ALERT = EventFamily("alert", AlertEvent, get_args(AlertTransition), ("subject",), None)
FAMILIES = (LEASE, WINDOW, FENCE, ALERT)


@dataclass(frozen=True, slots=True)
class EventType:
    """One kind of event: `name` as logged (`lease.renew_refused`), its family, its log level
    and the metrics it adds to; on the live stream (docs/monitoring.md, "Event stream") its type
    (`stream`, None: not streamed) and the fields of its `data` after `type` and `at`, in order."""

    name: str
    family: EventFamily
    level: int
    counts: tuple[Count, ...] = ()
    stream: str | None = None
    fields: tuple[str, ...] = ()


_HOLDING = ("lease", "holder", "generation")
_PREVIOUS = (*_HOLDING, "previous_holder", "previous_generation")
_RUN = ("job", "window", "lease", "holder", "generation", "attempt")
_ALERT = ("kind", "subject", "window", "summary")
_ACQUISITIONS = Count("tenure_lease_acquisitions", ("lease",))
_ALERTS = Count("tenure_alerts", ("kind", "transition"))

# Every event type, in the order the stream's documentation lists the streamed ones. Log levels:
# warnings for what an operator should see; info for refusals, window runs and resolved alerts;
# debug for routine lease and fence successes: those are counted in the metrics and kept as rows
# of lease_events, and a line for each cost a quarter of an acquire's CPU (bench/README.md).
CATALOGUE: Mapping[str, EventType] = MappingProxyType(
    {
        entry.name: entry
        for entry in (
            EventType(
                "lease.acquired", LEASE, logging.DEBUG, (_ACQUISITIONS,), "lease.acquired", _HOLDING
            ),
            EventType(
                "lease.taken_over",
                LEASE,
                logging.WARNING,
                (_ACQUISITIONS, Count("tenure_lease_takeovers", ("lease",))),
                "lease.taken_over",
                _PREVIOUS,
            ),
            EventType(
                "lease.released",
                LEASE,
                logging.DEBUG,
                (Count("tenure_lease_releases", ("lease",)),),
                "lease.released",
                _HOLDING,
            ),
            EventType(
                "lease.renew_refused",
                LEASE,
                logging.WARNING,
                (Count("tenure_lease_renew_refusals", ("lease",)),),
                "lease.lost",
                _HOLDING,
            ),
            EventType(
                "lease.force_released",
                LEASE,
                logging.WARNING,
                (),
                "lease.force_released",
                (*_PREVIOUS, "actor"),
            ),
            # Skipped runs: counted, not streamed.
            EventType(
                "lease.refused", LEASE, logging.INFO, (Count("tenure_lease_refusals", ("lease",)),)
            ),
            EventType(
                "window.claimed",
                WINDOW,
                logging.INFO,
                (Count("tenure_window_claims", ("job",)),),
                "window.claimed",
                _RUN,
            ),
            EventType(
                "window.completed",
                WINDOW,
                logging.INFO,
                (
                    Count("tenure_window_completions", ("job",)),
                    Count("tenure_job_run_duration_seconds", ("job",), "duration_seconds"),
                ),
                "window.completed",
                (*_RUN, "duration_seconds"),
            ),
            # Accepts are routine: counted, not streamed.
            EventType(
                "fence.accepted", FENCE, logging.DEBUG, (Count("tenure_fence_accepts", ("lease",)),)
            ),
            EventType(
                "fence.rejected",
                FENCE,
                logging.WARNING,
                (Count("tenure_fence_rejections", ("lease", "reason")),),
                "fence.rejected",
                ("resource", "lease", "generation", "reason", "highest"),
            ),
            EventType("alert.opened", ALERT, logging.WARNING, (_ALERTS,), "alert.opened", _ALERT),
            EventType("alert.resolved", ALERT, logging.INFO, (_ALERTS,), "alert.resolved", _ALERT),
        )
    }
)


def _possible_names() -> set[str]:
    """Every name an event can have, from its family's kinds."""
    return {f"{family.name}.{kind}" for family in FAMILIES for kind in family.kinds}


# An event without its entry would be dropped by every reader at run time: refuse to start.
if set(CATALOGUE) != _possible_names():
    raise RuntimeError(f"CATALOGUE does not name every event: {set(CATALOGUE) ^ _possible_names()}")


class EventSink(Protocol):
    """Receives every event as it happens; must not block and must not raise."""

    def record(self, event: Event) -> None: ...

    def record_many(self, events: Sequence[Event]) -> None:
        """`record` each event, in order: a batch's events (a batch verify records a hundred),
        which a sink may count together."""


class NoSink:
    """Drops events (tools and tests that build `Operations` without telemetry)."""

    def record(self, event: Event) -> None:
        return None

    def record_many(self, events: Sequence[Event]) -> None:
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


def event_fields(event: Event) -> dict[str, Any]:
    """An event's fields by name, in order (a FenceEvent is a named tuple, the others
    dataclasses)."""
    if isinstance(event, FenceEvent):
        return event._asdict()
    return {field.name: getattr(event, field.name) for field in fields(event)}


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
