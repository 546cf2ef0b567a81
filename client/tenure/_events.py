"""The service's live event stream (`GET /v1/events/stream`, Server-Sent Events), without I/O:
the line parser the HTML standard defines, the typed event, and what the next connection asks
for. `AsyncTenure.events()` / `Tenure.events()` do the reading and reconnecting.

    async for event in client.events(namespace="billing."):
        if event.type == RESET:          # events were missed: read the whole state again
            overview = await client.overview()
        elif event.type == "lease.taken_over":
            print(event.name, event.holder, event.generation)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tenure._errors import UnexpectedResponse
from tenure._event_types import NAME_FIELDS
from tenure._retry import RetryPolicy

__all__ = [
    "CONNECTED",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_STREAM_RETRY",
    "DROPPED",
    "RESET",
    "Message",
    "SSEParser",
    "StreamEvent",
]

STREAM_PATH = "/v1/events/stream"
# Control events, sent without an id.
RESET = "stream.reset"
DROPPED = "stream.dropped"
# Made by the client, not sent by the service: each time a connection is open, before its first
# event. State read after it misses nothing the stream will not tell.
CONNECTED = "stream.connected"
# Reconnection delay until the service's `retry:` field says otherwise (the standard leaves the
# default to the user agent; browsers use a few seconds).
DEFAULT_RECONNECT_DELAY = 1.0
# With no byte at all (not even a keepalive comment) for this long, the connection is taken for
# dead and opened again: several of the service's keepalive periods.
DEFAULT_IDLE_TIMEOUT = 60.0
# Failed connections in a row before the iterator raises: a follower rides out a restart of the
# service (about 30 s), where a single request would rather fail fast.
DEFAULT_STREAM_RETRY = RetryPolicy(attempts=10, backoff=0.5, max_backoff=5.0)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a Server-Sent Events stream, as dispatched by the standard's parser."""

    event: str
    data: str
    # The `id:` field given in this message, if it had one.
    id: str | None
    # The stream's last event id after this message (what a reconnection sends).
    last_event_id: str


@dataclass(slots=True)
class SSEParser:
    """The event-stream interpretation of the HTML standard (section 9.2.6), fed one line at a
    time, line terminator removed (CRLF, LF or CR). Unknown fields and comments are ignored."""

    last_event_id: str = ""
    # Milliseconds from the last valid `retry:` field, else None.
    retry: int | None = None
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _id: str | None = None
    _started: bool = False

    def feed(self, line: str) -> Message | None:
        """Take one line; the message it completes, if it is the blank line ending one."""
        if not self._started:
            self._started = True
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)
        return None

    def _dispatch(self) -> Message | None:
        given, self._id = self._id, None
        if given is not None:
            self.last_event_id = given
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return Message(event or "message", "\n".join(data), given, self.last_event_id)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of the stream: `type` (`lease.acquired`, `window.claimed`, `fence.rejected`,
    `alert.opened`, …,
    the service's control events `stream.reset` and `stream.dropped`, or the client's own
    `stream.connected`), its JSON `data`, and its `id` (None for control events). The
    properties read the usual fields of `data`."""

    id: str | None
    type: str
    data: Mapping[str, Any]

    @classmethod
    def of(cls, message: Message) -> StreamEvent:
        """The event a message carries; `UnexpectedResponse` when its data is no JSON object."""
        try:
            data = json.loads(message.data)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise UnexpectedResponse(
                f"event {message.event!r}: data is not a JSON object", status=200
            )
        return cls(message.id, message.event, data)

    @property
    def name(self) -> str | None:
        """The lease (lease events), job (window events), resource (fence rejections) or
        subject (alerts) it is about."""
        key = NAME_FIELDS.get(self.type.partition(".")[0])
        return None if key is None else self._text(key)

    @property
    def at(self) -> datetime | None:
        """When the serving replica recorded it."""
        text = self._text("at")
        return None if text is None else datetime.fromisoformat(text)

    @property
    def holder(self) -> str | None:
        return self._text("holder")

    @property
    def generation(self) -> int | None:
        value = self.data.get("generation")
        return value if isinstance(value, int) else None

    @property
    def window(self) -> str | None:
        return self._text("window")

    @property
    def control(self) -> bool:
        """A message about the stream itself (`stream.reset`, `stream.dropped`)."""
        return self.type.startswith("stream.")

    def _text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) else None


def check_media_type(content_type: str) -> None:
    """Refuse an answer that is not an event stream, as EventSource does (a proxy's page, say)."""
    if content_type.partition(";")[0].strip().lower() != "text/event-stream":
        raise UnexpectedResponse(
            f"not an event stream: {content_type or 'no content type'}", status=200
        )


def stream_params(namespace: str | None) -> dict[str, str]:
    return {} if namespace is None else {"namespace": namespace}


def resume_headers(last_event_id: str | None) -> dict[str, str]:
    """What a (re)connection sends to be given only the events after `last_event_id`."""
    return {"accept": "text/event-stream", "cache-control": "no-store"} | (
        {} if not last_event_id else {"last-event-id": last_event_id}
    )


def connected(resumed_from: str | None) -> StreamEvent:
    """The client's own event for a connection just opened."""
    return StreamEvent(None, CONNECTED, {"type": CONNECTED, "resumed_from": resumed_from})


def resume_point(event: StreamEvent, last_event_id: str | None) -> str | None:
    """The id to resume from after `event`: its own, or the one a `stream.dropped` names."""
    if event.type == DROPPED:
        named = event.data.get("last_event_id")
        return named if isinstance(named, str) and named else last_event_id
    return event.id or last_event_id
