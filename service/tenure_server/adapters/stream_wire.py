"""The event stream's wire format (docs/monitoring.md, "Event stream"): which events are
streamed, the `data` of each, and their Server-Sent Events frames."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

from tenure_server.domain.events import AlertEvent, Event, FenceEvent, LeaseEvent, WindowEvent

# Reconnection delay a browser's EventSource is told to use.
RETRY_MILLISECONDS = 2000
LEASE_TYPES = {
    "acquired": "lease.acquired",
    "taken_over": "lease.taken_over",
    "released": "lease.released",
    "renew_refused": "lease.lost",
    "force_released": "lease.force_released",
}
# Every streamed type: the stream's documentation, the dashboard's script (api/dashboard.py
# hands it this list) and the tests that each is rendered are derived from it.
EVENT_TYPES = (
    *LEASE_TYPES.values(),
    "window.claimed",
    "window.completed",
    "fence.rejected",
    "alert.opened",
    "alert.resolved",
)


def is_streamed(event: Event) -> bool:
    if isinstance(event, LeaseEvent):
        return event.kind in LEASE_TYPES
    if isinstance(event, FenceEvent):
        return event.rejection is not None  # accepts are routine: counted, not streamed
    return isinstance(event, WindowEvent | AlertEvent)


def streamed(event: Event, at: float) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """The names a stream filters an event by (a reader must own each) and its `data`; None
    for an event not streamed."""
    if not is_streamed(event):
        return None
    names, fields = _names_and_fields(event)
    kind = LEASE_TYPES[event.kind] if isinstance(event, LeaseEvent) else event.name
    return names, {"type": kind, "at": _iso(at), **fields}


def _names_and_fields(event: Event) -> tuple[tuple[str, ...], dict[str, Any]]:
    if isinstance(event, LeaseEvent):
        fields: dict[str, Any] = {
            "lease": event.lease,
            "holder": event.holder,
            "generation": event.generation,
        }
        if event.kind in ("taken_over", "force_released"):
            fields["previous_holder"] = event.previous_holder
            fields["previous_generation"] = event.previous_generation
        if event.kind == "force_released":
            fields["actor"] = event.actor
        return (event.lease,), fields
    if isinstance(event, WindowEvent):
        fields = {
            "job": event.job,
            "window": event.window,
            "lease": event.lease,
            "holder": event.holder,
            "generation": event.generation,
            "attempt": event.attempt,
        }
        if event.kind == "completed":
            fields["duration_seconds"] = event.duration_seconds
        return (event.job,), fields
    if isinstance(event, FenceEvent):
        # Both names, as verify requires both: a reader of only one of them sees nothing.
        fields = {
            "resource": event.resource,
            "lease": event.lease,
            "generation": event.generation,
            "reason": event.rejection,
            "highest": event.highest,
        }
        return (event.resource, event.lease), fields
    return (event.subject,), {
        "kind": event.kind,
        "subject": event.subject,
        "window": event.window,
        "summary": event.summary,
    }


@functools.lru_cache(maxsize=4)
def _second(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _iso(at: float) -> str:
    """`at` in ISO 8601 UTC to the millisecond; the publisher formats every event, and events
    come many to a second, so the date and time of the second are formatted once."""
    second = int(at)
    return f"{_second(second)}.{int((at - second) * 1000):03d}Z"


def frame(kind: str, data: str, event_id: str | None = None) -> bytes:
    """One Server-Sent Event of JSON `data`; control events have no id."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: {data}\n\n".encode()


CONTROL_TYPES = ("stream.reset", "stream.dropped")


def reset_frame(detail: str) -> bytes:
    data = {"type": "stream.reset", "reason": "history-gap", "detail": detail}
    return frame("stream.reset", to_json(data))


def dropped_frame(last_event_id: str) -> bytes:
    data = {
        "type": "stream.dropped",
        "reason": "slow-consumer",
        "detail": "this stream fell too far behind; reconnect with Last-Event-ID",
        "last_event_id": last_event_id,
    }
    return frame("stream.dropped", to_json(data))


# ASCII only (the default), so that a batch's length in characters is its length in bytes. One
# encoder: json.dumps with separators builds a new one per call, a third of the cost.
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def to_json(value: object) -> str:
    return _ENCODER.encode(value)
