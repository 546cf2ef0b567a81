"""The live event stream's hub (GET /v1/events/stream, docs/monitoring.md "Event stream").

Events reach every replica's streams through PostgreSQL's LISTEN/NOTIFY:

- `record` (an `EventSink`) only appends a streamed event to a bounded buffer: an operation never
  waits for, nor pays, a NOTIFY, which serialises the commits of every notifying transaction.
- `publish` (a background task) sends the buffer every `publish_seconds` as JSON batches of at
  most `MAX_PAYLOAD_BYTES` on the channel. Ids are `<publisher>-<sequence>`: the publisher id is
  random per process start, so an id is unique and the same on every replica, with no database
  round-trip.
- `deliver` (the channel's listener) keeps the last `history` events received, in the order
  PostgreSQL delivers them (commit order, the same on every replica), for `Last-Event-ID`
  resumption, and hands each to the subscribers allowed to see it.

What is lost says so: events dropped from a full buffer (the database down) or a failed send are
announced on the channel, and a re-established listener may have missed notifications; either
way every subscriber gets `stream.reset` and the history is cleared, so that no resumption
silently skips the gap. A subscriber whose queue is full is dropped (`stream.dropped`) and
forgotten, so a consumer that stops reading holds no more than its queue.

The SSE framing is done here, once per event and replica, and the bytes shared by every stream.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from tenure_server.app.ports import EventChannel
from tenure_server.domain.errors import ShuttingDown, TenureError
from tenure_server.domain.events import AlertEvent, Event, EventSink, LeaseEvent, WindowEvent

_log = logging.getLogger("tenure.stream")

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; the margin is for nothing in
# particular but keeps a batch well under it.
MAX_PAYLOAD_BYTES = 7500
# Reconnection delay a browser's EventSource is told to use.
RETRY_MILLISECONDS = 2000
LEASE_TYPES = {
    "acquired": "lease.acquired",
    "taken_over": "lease.taken_over",
    "released": "lease.released",
    "renew_refused": "lease.lost",
}
# While events are being lost (the database down), one warning per interval, not per event.
WARNING_INTERVAL_SECONDS = 10.0
Ending = Literal["slow-consumer", "shutting-down"]


@dataclass(frozen=True, slots=True)
class StreamConfig:
    publish_seconds: float = 0.1
    buffer_size: int = 10000
    history: int = 1000
    subscriber_queue: int = 1000
    max_streams: int = 100
    keepalive_seconds: float = 15.0


class TooManyStreams(Exception):
    """This process serves `max_streams` streams already."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"this process serves {limit} event streams already; retry later")


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
    return f"{head}event: {kind}\ndata: {_json(data)}\n\n".encode()


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


def _json(value: object) -> str:
    # ASCII only, so that a batch's length in characters is its length in bytes.
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class _Received:
    id: str
    name: str
    frame: bytes


class Subscription:
    """One stream's queue: frames waiting to be sent, at most `limit` of them."""

    def __init__(self, visible: Callable[[str], bool], limit: int) -> None:
        self.visible = visible
        self._limit = limit
        self._frames: deque[tuple[str | None, bytes]] = deque()
        self._ready = asyncio.Event()
        self.ending: Ending | None = None
        self.last_event_id: str | None = None
        # Called once if the stream is dropped (its sender bounds what it still sends).
        self.when_dropped: Callable[[], None] | None = None

    def offer(self, event_id: str | None, data: bytes) -> bool:
        """Queue a frame; False when the queue is full."""
        if len(self._frames) >= self._limit:
            return False
        self._frames.append((event_id, data))
        self._ready.set()
        return True

    def replay(self, frames: list[tuple[str, bytes]]) -> None:
        """Queue events from the history, past the limit: they are the history's own bytes, and
        live events then wait for room as usual."""
        self._frames.extend(frames)
        self._ready.set()

    def end(self, ending: Ending) -> None:
        """Forget what is queued and wake the stream, which then ends."""
        self.ending = ending
        self._frames.clear()
        self._ready.set()
        if ending == "slow-consumer" and self.when_dropped is not None:
            self.when_dropped()

    async def take(self, wait_seconds: float) -> bytes:
        """What is queued, as one chunk; empty after `wait_seconds` with nothing, or once ended."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait_seconds)
        self._ready.clear()
        chunk = b"".join(data for _, data in self._frames)
        for event_id, _ in self._frames:
            if event_id is not None:
                self.last_event_id = event_id
        self._frames.clear()
        return chunk


class EventHub:
    """Buffer, publisher, history and subscribers of one process."""

    def __init__(self, config: StreamConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self._clock = clock
        self.publisher = secrets.token_hex(6)
        self._sequence = itertools.count(1)
        self._outgoing: deque[tuple[Event, float]] = deque()
        self._gap: str | None = None
        self._history: deque[_Received] = deque(maxlen=config.history)
        self._subscribers: set[Subscription] = set()
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self.dropped_events = 0
        self.dropped_streams = 0
        self._warned_at = -WARNING_INTERVAL_SECONDS

    @property
    def streams(self) -> int:
        return len(self._subscribers)

    # Recording (every operation): cheap, never blocks, never raises.
    def record(self, event: Event) -> None:
        if not _stream_kind(event):
            return
        if len(self._outgoing) >= self.config.buffer_size:
            self._outgoing.popleft()
            self._lost(1, "the event buffer overflowed")
        self._outgoing.append((event, self._clock()))

    def _lost(self, count: int, why: str) -> None:
        self.dropped_events += count
        now = time.monotonic()
        if now - self._warned_at >= WARNING_INTERVAL_SECONDS:
            self._warned_at = now
            _log.warning("event stream: %s; %d events dropped so far", why, self.dropped_events)
        self._gap = f"{why} on replica {self.publisher}: events were dropped"

    # Publishing (one background task).
    def start(self, channel: EventChannel) -> None:
        self._task = asyncio.create_task(self._publish_forever(channel), name="tenure-events")

    async def stop(self) -> None:
        self.close()
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    async def _publish_forever(self, channel: EventChannel) -> None:
        while True:
            await asyncio.sleep(self.config.publish_seconds)
            if self._outgoing or self._gap is not None:
                await self.publish(channel)

    async def publish(self, channel: EventChannel) -> None:
        """Send what was recorded, in batches; while the channel is down, keep it buffered."""
        if not channel.listening:
            return
        batches = list(self.take_batches())
        try:
            await channel.publish_events([payload for payload, _ in batches])
        except TenureError as error:
            self._lost(sum(count for _, count in batches), error.detail)

    def take_batches(self) -> Iterator[tuple[str, int]]:
        """The outgoing events as JSON arrays of at most MAX_PAYLOAD_BYTES, each with its count
        of events; a reset marker first when events were lost before."""
        items: list[str] = []
        if self._gap is not None:
            items.append(_json({"reset": self._gap}))
            self._gap = None
        size, count = 2 + sum(len(item) + 1 for item in items), 0
        while self._outgoing:
            item = self._item(*self._outgoing.popleft())
            if len(item) + 3 > MAX_PAYLOAD_BYTES:
                self._lost(1, "an event too large for a notification")
                continue
            if items and size + len(item) + 1 > MAX_PAYLOAD_BYTES:
                yield "[" + ",".join(items) + "]", count
                items, size, count = [], 2, 0
            items.append(item)
            size, count = size + len(item) + 1, count + 1
        if items:
            yield "[" + ",".join(items) + "]", count

    def _item(self, event: Event, at: float) -> str:
        found = streamed(event, at)
        assert found is not None  # record() keeps only streamed events
        name, data = found
        return _json({"id": f"{self.publisher}-{next(self._sequence)}", "name": name, "data": data})

    # Receiving (the channel's listener).
    def deliver(self, payload: str) -> None:
        try:
            items = json.loads(payload)
            for item in items if isinstance(items, list) else [None]:
                if not isinstance(item, dict):
                    raise TypeError
                if "reset" in item:
                    self.reset(str(item["reset"]))
                    continue
                data, event_id = item["data"], str(item["id"])
                framed = frame(str(data["type"]), data, event_id)
                self._received(_Received(event_id, str(item["name"]), framed))
        except (ValueError, TypeError, KeyError):
            _log.warning("event stream: ignored a malformed notification")

    def connected(self) -> None:
        self.reset("the event channel was (re)connected: events may have been missed")

    def reset(self, detail: str) -> None:
        """Events were lost: no resumption may skip them, and every stream is told."""
        self._history.clear()
        data = reset_frame(detail)
        for subscription in list(self._subscribers):
            if not subscription.offer(None, data):
                self._drop(subscription)

    def _received(self, received: _Received) -> None:
        self._history.append(received)
        for subscription in list(self._subscribers):
            if subscription.visible(received.name) and not subscription.offer(
                received.id, received.frame
            ):
                self._drop(subscription)

    def _drop(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)
        self.dropped_streams += 1
        subscription.end("slow-consumer")

    # Subscribers (the route).
    def subscribe(self, visible: Callable[[str], bool], last_event_id: str | None) -> Subscription:
        """A new stream's queue, holding what followed `last_event_id` (or a reset when that
        event is not in the history)."""
        if self._closed:
            raise ShuttingDown()
        if len(self._subscribers) >= self.config.max_streams:
            raise TooManyStreams(self.config.max_streams)
        subscription = Subscription(visible, self.config.subscriber_queue)
        if last_event_id is not None:
            self._replay(subscription, last_event_id)
        self._subscribers.add(subscription)
        return subscription

    def _replay(self, subscription: Subscription, last_event_id: str) -> None:
        ids = [received.id for received in self._history]
        if last_event_id not in ids:
            subscription.offer(None, reset_frame(f"event {last_event_id!r} is not in the history"))
            return
        following = itertools.islice(self._history, ids.index(last_event_id) + 1, None)
        subscription.replay([(r.id, r.frame) for r in following if subscription.visible(r.name)])

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)

    def close(self) -> None:
        """End every stream (the process is shutting down) and refuse new ones."""
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.end("shutting-down")
        self._subscribers.clear()


def _stream_kind(event: Event) -> bool:
    if isinstance(event, LeaseEvent):
        return event.kind in LEASE_TYPES
    return isinstance(event, WindowEvent | AlertEvent)


class FanOut:
    """An `EventSink` that hands each event to several sinks (telemetry, then the stream)."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks = sinks

    def record(self, event: Event) -> None:
        for sink in self._sinks:
            sink.record(event)
