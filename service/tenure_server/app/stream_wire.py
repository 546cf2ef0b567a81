"""The event stream's wire format (docs/monitoring.md, "Event stream"): which events are
streamed and the `data` of each, as the one catalogue of event types says
(`domain/events.CATALOGUE`), and their Server-Sent Events frames."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

import orjson

from tenure_server.domain.events import CATALOGUE, Event

# Reconnection delay a browser's EventSource is told to use.
RETRY_MILLISECONDS = 2000
# Every streamed type, from the one catalogue: the stream's documentation, the dashboard's script
# (api/dashboard.py hands it this list) and the tests that each is rendered are derived from it.
EVENT_TYPES = tuple(entry.stream for entry in CATALOGUE.values() if entry.stream is not None)
# By event name, for each streamed type: its stream type, the attributes naming what a stream
# filters it by, and its data fields with the attribute each is read from (built once: the
# publisher frames every event).
_WIRE = {
    entry.name: (
        entry.stream,
        entry.family.names,
        tuple((name, entry.family.attribute(name)) for name in entry.fields),
    )
    for entry in CATALOGUE.values()
    if entry.stream is not None
}


def is_streamed(event: Event) -> bool:
    return event.name in _WIRE


def streamed(event: Event, at: float) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """The names a stream filters an event by (a reader must own each) and its `data`; None
    for an event not streamed."""
    wire = _WIRE.get(event.name)
    if wire is None:
        return None
    kind, names, fields = wire
    data: dict[str, Any] = {"type": kind, "at": _iso(at)}
    for name, attribute in fields:
        data[name] = getattr(event, attribute)
    return tuple([getattr(event, name) for name in names]), data


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
# The values orjson writes as that encoder does (floats it writes otherwise: 1e-05 is 1e-5).
_PLAIN = frozenset({str, int, bool, type(None)})


def to_json(value: object) -> str:
    """`value` in JSON as `_ENCODER` writes it. A flat object of plain values (an event's data:
    the publisher encodes one per event) goes through orjson, at less than half the CPU, when
    what orjson wrote is what the encoder writes: ASCII without DEL (the encoder escapes every
    other character; tests/unit/test_stream_wire.py compares the two)."""
    if type(value) is dict and all(type(item) in _PLAIN for item in value.values()):
        try:
            encoded = orjson.dumps(value)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits, a key not a string
            pass
        else:
            if encoded.isascii() and b"\x7f" not in encoded:
                return encoded.decode()
    return _ENCODER.encode(value)
