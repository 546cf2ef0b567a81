"""Each process's one LISTEN connection, shared by two channels that reach every replica.

- Release wake-ups: the requests waiting for a lease are woken when `release_lease` notifies (the
  notification is sent at commit). Waiters hold no pooled connection while they wait. When the
  listening connection is down, waiters fall back to re-trying every `FALLBACK_POLL_SECONDS`.
- The live event stream: batches of events published on `tenure_events` (`publish_events`, sent
  on this same connection) are handed to `EventListener.deliver` in commit order, and
  `EventListener.connected` is told each time the connection is (re-)established, since
  notifications sent while it was down are lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Protocol

import asyncpg

from tenure_server.db.sql import load
from tenure_server.domain.errors import StorageUnavailable

CHANNEL = "tenure_lease_released"
EVENTS_CHANNEL = "tenure_events"
LISTENER_NAME = "tenure-listener"
# A send that takes longer is abandoned (its events counted as lost): the publisher must not
# stall behind a database that does not answer.
PUBLISH_TIMEOUT_SECONDS = 5.0
QUERIES = load("events.sql")
FALLBACK_POLL_SECONDS = 1.0
_RECONNECT_DELAY_SECONDS = 1.0

_log = logging.getLogger("tenure.db")


class EventListener(Protocol):
    """Receives the event channel's batches (adapters.stream's hub); must not block nor raise."""

    def deliver(self, payload: str) -> None: ...
    def connected(self) -> None: ...


class ReleaseNotifications:
    def __init__(self, dsn: str, events: EventListener | None = None) -> None:
        self._dsn = dsn
        self._events = events
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._connection: asyncpg.Connection[asyncpg.Record] | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen_forever(), name="tenure-release-listener")
        # Start-up waits for the first LISTEN so the first waiters are not left to the fallback.
        with suppress(TimeoutError):
            await asyncio.wait_for(self._listening.wait(), timeout=5)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with suppress(asyncio.CancelledError):
                await self._task

    @contextmanager
    def subscribe(self, name: str) -> Iterator[asyncio.Event]:
        """An event set whenever `name` is released, for as long as the block runs."""
        event = asyncio.Event()
        self._waiters[name].add(event)
        try:
            yield event
        finally:
            self._waiters[name].discard(event)
            if not self._waiters[name]:
                del self._waiters[name]

    async def publish_events(self, payloads: Sequence[str]) -> None:
        """Send the batches on the event channel in one statement, through the listening
        connection (no pooled connection is taken; the only statement run on it is this one)."""
        connection = self._connection
        if connection is None:
            raise StorageUnavailable("the event channel is not connected")
        try:
            await connection.execute(
                QUERIES["publish_events"], list(payloads), timeout=PUBLISH_TIMEOUT_SECONDS
            )
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
            raise StorageUnavailable(f"event channel: {type(error).__name__}") from error

    def _deliver(self, _connection: object, _pid: int, _channel: str, payload: object) -> None:
        if self._events is not None:
            self._events.deliver(str(payload))

    def released(self, name: str) -> None:
        """A release of `name` committed in this process: its waiters here are woken now, not
        after the notification's trip through the database and the listening connection (the
        notification still wakes those of every other process). A wake-up is only a cue to
        retry the acquire, which the database decides."""
        for event in self._waiters.get(name, ()):
            event.set()

    def _wake(self, _connection: object, _pid: int, _channel: str, name: object) -> None:
        self.released(str(name))

    def _wake_everyone(self) -> None:
        # Releases may have been missed while the connection was down: let every waiter re-try.
        for events in self._waiters.values():
            for event in events:
                event.set()

    async def _listen_forever(self) -> None:
        while True:
            try:
                await self._listen_until_disconnected()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
                _log.warning("release listener failed: %s", type(error).__name__)
            finally:
                self._listening.clear()
            await asyncio.sleep(_RECONNECT_DELAY_SECONDS)

    async def _listen_until_disconnected(self) -> None:
        # Named, so that operators (and tests) can find it in pg_stat_activity.
        connection = await asyncpg.connect(
            self._dsn, server_settings={"application_name": LISTENER_NAME}
        )
        closed = asyncio.Event()
        connection.add_termination_listener(lambda _connection: closed.set())
        try:
            await connection.add_listener(CHANNEL, self._wake)
            if self._events is not None:
                await connection.add_listener(EVENTS_CHANNEL, self._deliver)
                self._events.connected()
            self._connection = connection
            self._listening.set()
            self._wake_everyone()
            await closed.wait()
            _log.warning("release listener lost its connection; reconnecting")
        finally:
            self._connection = None
            with suppress(Exception):
                await connection.close(timeout=1)
