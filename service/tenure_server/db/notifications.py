"""Wakes the requests waiting for a lease when it is released, across every service replica.

Each process keeps one dedicated connection that LISTENs on the channel `release_lease` notifies
(the notification is sent at commit). Waiters hold no pooled connection while they wait. When the
listening connection is down, waiters fall back to re-trying every `FALLBACK_POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import asyncpg

CHANNEL = "tenure_lease_released"
FALLBACK_POLL_SECONDS = 1.0
_RECONNECT_DELAY_SECONDS = 1.0

_log = logging.getLogger("tenure.db")


class ReleaseNotifications:
    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

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

    def _wake(self, _connection: object, _pid: int, _channel: str, name: object) -> None:
        for event in self._waiters.get(str(name), ()):
            event.set()

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
        connection = await asyncpg.connect(self._dsn)
        closed = asyncio.Event()
        connection.add_termination_listener(lambda _connection: closed.set())
        try:
            await connection.add_listener(CHANNEL, self._wake)
            self._listening.set()
            self._wake_everyone()
            await closed.wait()
            _log.warning("release listener lost its connection; reconnecting")
        finally:
            with suppress(Exception):
                await connection.close(timeout=1)
