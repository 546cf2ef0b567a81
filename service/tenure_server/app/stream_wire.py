"""The event stream's wire format (docs/monitoring.md, "Event stream"): which events are
streamed, the `data` of each, and their Server-Sent Events frames."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tenure_server.domain.events import AlertEvent, Event, LeaseEvent, WindowEvent

# Reconnection delay a browser's EventSource is told to use.
RETRY_MILLISECONDS = 2000
LEASE_TYPES = {
    "acquired": "lease.acquired",
    "taken_over": "lease.taken_over",
    "released": "lease.released",
    "renew_refused": "lease.lost",
}


def is_streamed(event: Event) -> bool:
    if isinstance(event, LeaseEvent):
        return event.kind in LEASE_TYPES
    return isinstance(event, WindowEvent | AlertEvent)


def streamed(event: Event, at: float) -> tuple[str, dict[str, Any]] | None:
    """The name a stream filters an event by and its `data`; None for an event not streamed."""
    fields: dict[str, Any]
    if isinstance(event, LeaseEvent):
        kind = LEASE_TYPES.get(event.kind)
        if kind is None:
            return None
        name = event.lease
        fields = {"lease": event.lease, "holder": event.holder, "generation": event.generation}
        if event.kind == "taken_over":
            fields["previous_holder"] = event.previous_holder
            fields["previous_generation"] = event.previous_generation
    elif isinstance(event, WindowEvent):
        kind, name = event.name, event.job
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
    elif isinstance(event, AlertEvent):
        kind, name = event.name, event.subject
        fields = {
            "kind": event.kind,
            "subject": event.subject,
            "window": event.window,
            "summary": event.summary,
        }
    else:
        return None
    moment = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
    return name, {"type": kind, "at": moment.replace("+00:00", "Z"), **fields}


def frame(kind: str, data: dict[str, Any], event_id: str | None = None) -> bytes:
    """One Server-Sent Event; control events have no id."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: {to_json(data)}\n\n".encode()


def reset_frame(detail: str) -> bytes:
    data = {"type": "stream.reset", "reason": "history-gap", "detail": detail}
    return frame("stream.reset", data)


def dropped_frame(last_event_id: str | None) -> bytes:
    data = {
        "type": "stream.dropped",
        "reason": "slow-consumer",
        "detail": "this stream fell too far behind; reconnect with Last-Event-ID",
        "last_event_id": last_event_id,
    }
    return frame("stream.dropped", data)


def to_json(value: object) -> str:
    # ASCII only, so that a batch's length in characters is its length in bytes.
    return json.dumps(value, separators=(",", ":"))
