"""The live event stream's hub (GET /v1/events/stream, docs/monitoring.md "Event stream").

Events reach every replica's streams through PostgreSQL's LISTEN/NOTIFY:

- `record` (an `EventSink`) only appends a streamed event to a bounded buffer: an operation never
  waits for, nor pays, a NOTIFY, which serialises the commits of every notifying transaction.
- `publish` (a background task) sends the buffer every `publish_seconds` on the channel, in
  payloads of at most `MAX_PAYLOAD_BYTES`, all in one statement. Ids are `<publisher>-<sequence>`:
  the publisher id is random per process start, so an id is unique and the same on every
  replica, with no database round-trip.
- `deliver` (the channel's listener) keeps the last `history` events received, in the order
  PostgreSQL delivers them (commit order, the same on every replica), for `Last-Event-ID`
  resumption, and hands each to the subscribers allowed to see it.

What is lost says so: events dropped from a full buffer (the database down) or a failed send are
announced on the channel, and a re-established listener may have missed notifications; either
way every subscriber gets `stream.reset` and the history is cleared, so that no resumption
silently skips the gap. A subscriber whose queue is full is dropped (`stream.dropped`, naming
where to resume) and forgotten, so a consumer that stops reading holds no more than its queue.
Streams are capped per process and per principal, so that one token cannot take them all.

Each event is framed once per replica (app/stream_wire.py), and the bytes shared by every
stream.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Literal, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge

from tenure_server.app.ports import EventChannel
from tenure_server.app.stream_wire import (
    frame,
    is_streamed,
    reset_frame,
    streamed,
    to_json,
)
from tenure_server.domain.errors import ShuttingDown, TenureError, TooManyStreams
from tenure_server.domain.events import Event, EventSink

_log = logging.getLogger("tenure.stream")

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; the margin is for nothing in
# particular but keeps a batch well under it.
MAX_PAYLOAD_BYTES = 7500
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
    max_streams_per_principal: int = 25
    keepalive_seconds: float = 15.0


class _Received(NamedTuple):  # a named tuple: every worker builds one per event published
    id: str
    names: tuple[str, ...]
    frame: bytes


class Subscription:
    """One stream's queue: frames waiting to be sent, at most `limit` of them. `last_event_id`
    is where the next stream resumes so as to miss nothing: the last event taken or, before
    any, where this one started."""

    def __init__(
        self, visible: Callable[[str], bool], limit: int, principal: str | None, start: str
    ) -> None:
        self.visible = visible
        self.principal = principal
        self._limit = limit
        self._frames: deque[tuple[str | None, bytes]] = deque()
        self._ready = asyncio.Event()
        self.ending: Ending | None = None
        self.last_event_id = start
        # Called once if the stream is dropped (its sender bounds what it still sends).
        self.when_dropped: Callable[[], None] | None = None

    def sees(self, names: tuple[str, ...]) -> bool:
        """Whether this stream may see an event: only when it may see each of its names (a fence
        rejection names a resource and a lease, and verify requires both)."""
        return all(self.visible(name) for name in names)

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


LossReason = Literal["buffer_full", "send_failed", "too_large"]


class StreamMetrics:
    """The stream's own metrics, in the app's registry (docs/monitoring.md, "Metrics"); shared
    between `--workers` processes like the other counters."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.events_dropped = Counter(
            "tenure_events_dropped",
            "Stream events lost before reaching the replicas, by reason.",
            ("reason",),
            registry=registry,
        )
        self.streams_dropped = Counter(
            "tenure_event_streams_dropped",
            "Event streams dropped because their consumer fell behind.",
            registry=registry,
        )
        self.streams = Gauge(
            "tenure_event_streams",
            "Event streams open on this replica.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.streams_refused = Counter(
            "tenure_event_streams_refused",
            "Event streams refused: the process's streams, or the principal's there, were full.",
            ("per",),
            registry=registry,
        )
        for per in ("process", "principal"):  # at zero, so that increase() sees the first
            self.streams_refused.labels(per)


class EventHub:
    """Buffer, publisher, history and subscribers of one process."""

    def __init__(
        self,
        config: StreamConfig,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._metrics = None if registry is None else StreamMetrics(registry)
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
        if not is_streamed(event):
            return
        if len(self._outgoing) >= self.config.buffer_size:
            self._outgoing.popleft()
            self._lost(1, "buffer_full", "the event buffer overflowed")
        self._outgoing.append((event, self._clock()))

    def record_many(self, events: Sequence[Event]) -> None:
        for event in events:
            self.record(event)

    def _lost(self, count: int, reason: LossReason, why: str) -> None:
        self.dropped_events += count
        if self._metrics is not None:
            self._metrics.events_dropped.labels(reason).inc(count)
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
            if not (self._outgoing or self._gap is not None):
                continue
            try:
                await self.publish(channel)
            except Exception:  # a bug here must not end the stream of every later event
                _log.exception("event stream: publishing failed")

    async def publish(self, channel: EventChannel) -> None:
        """Send what was recorded, in batches; while the channel is down, keep it buffered."""
        if not channel.listening:
            return
        batches = list(self.take_batches())
        try:
            await channel.publish_events([payload for payload, _ in batches])
        except TenureError as error:
            self._lost(sum(count for _, count in batches), "send_failed", error.detail)

    def take_batches(self) -> Iterator[tuple[str, int]]:
        """The outgoing events as notification payloads of at most MAX_PAYLOAD_BYTES, each with
        its count of events: a line per event, `E<tab>id<tab>names<tab>type<tab>data` (names
        separated by spaces; ids, names and types hold no tab nor space, the JSON data no raw
        control character), which the receivers frame without decoding it; first a line
        `R<tab>detail` when events were lost before."""
        lines: list[str] = []
        if self._gap is not None:
            lines.append("R\t" + " ".join(self._gap.split()))  # on one line
            self._gap = None
        size, count = sum(len(line) + 1 for line in lines), 0
        while self._outgoing:
            line = self._line(*self._outgoing.popleft())
            if len(line) > MAX_PAYLOAD_BYTES:
                self._lost(1, "too_large", "an event too large for a notification")
                continue
            if lines and size + len(line) > MAX_PAYLOAD_BYTES:
                yield "\n".join(lines), count
                lines, size, count = [], 0, 0
            lines.append(line)
            size, count = size + len(line) + 1, count + 1
        if lines:
            yield "\n".join(lines), count

    def _line(self, event: Event, at: float) -> str:
        found = streamed(event, at)
        assert found is not None  # record() keeps only streamed events
        names, data = found
        event_id = f"{self.publisher}-{next(self._sequence)}"
        return f"E\t{event_id}\t{' '.join(names)}\t{data['type']}\t{to_json(data)}"

    # Receiving (the channel's listener).
    def deliver(self, payload: str) -> None:
        for line in payload.split("\n"):
            kind, _, rest = line.partition("\t")
            fields = rest.split("\t", 3)
            if kind == "E" and len(fields) == 4:
                event_id, names, event_type, data = fields
                framed = frame(event_type, data, event_id)
                self._received(_Received(event_id, tuple(names.split(" ")), framed))
            elif kind == "R":
                self.reset(rest)
            else:
                _log.warning("event stream: ignored a malformed notification line")

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
            if subscription.sees(received.names) and not subscription.offer(
                received.id, received.frame
            ):
                self._drop(subscription)

    def _drop(self, subscription: Subscription) -> None:
        self.unsubscribe(subscription)
        self.dropped_streams += 1
        if self._metrics is not None:
            self._metrics.streams_dropped.inc()
        subscription.end("slow-consumer")

    # Subscribers (the route).
    def subscribe(
        self,
        visible: Callable[[str], bool],
        last_event_id: str | None,
        principal: str | None = None,
    ) -> Subscription:
        """A new stream's queue, holding what followed `last_event_id` (or a reset when that
        event is not in the history). `principal` None (authentication off: every caller is
        the anonymous one) is held to the process's cap only."""
        if self._closed:
            raise ShuttingDown()
        self._admit(principal)
        # A stream dropped before its first event resumes from here: the newest event now, or
        # on a replica without history an id never sent, so that it resumes with a reset.
        start = last_event_id or (self._history[-1].id if self._history else f"{self.publisher}-0")
        subscription = Subscription(visible, self.config.subscriber_queue, principal, start)
        if last_event_id is not None:
            self._replay(subscription, last_event_id)
        self._subscribers.add(subscription)
        if self._metrics is not None:
            self._metrics.streams.inc()
        return subscription

    def _admit(self, principal: str | None) -> None:
        """Refuse a stream past the principal's cap, or the process's (counted per kind)."""
        cap = self.config.max_streams_per_principal
        if (
            principal is not None
            and sum(s.principal == principal for s in self._subscribers) >= cap
        ):
            refusal = TooManyStreams(cap, principal)
        elif len(self._subscribers) >= self.config.max_streams:
            refusal = TooManyStreams(self.config.max_streams)
        else:
            return
        if self._metrics is not None:
            self._metrics.streams_refused.labels(refusal.per).inc()
        raise refusal

    def _replay(self, subscription: Subscription, last_event_id: str) -> None:
        ids = [received.id for received in self._history]
        if last_event_id not in ids:
            subscription.offer(None, reset_frame(f"event {last_event_id!r} is not in the history"))
            return
        following = itertools.islice(self._history, ids.index(last_event_id) + 1, None)
        subscription.replay([(r.id, r.frame) for r in following if subscription.sees(r.names)])

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)
            if self._metrics is not None:
                self._metrics.streams.dec()

    def close(self) -> None:
        """End every stream (the process is shutting down) and refuse new ones."""
        self._closed = True
        for subscription in list(self._subscribers):
            self.unsubscribe(subscription)
            subscription.end("shutting-down")


class FanOut:
    """An `EventSink` that hands each event to several sinks (telemetry, then the stream)."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks = sinks

    def record(self, event: Event) -> None:
        for sink in self._sinks:
            sink.record(event)

    def record_many(self, events: Sequence[Event]) -> None:
        for sink in self._sinks:
            sink.record_many(events)
