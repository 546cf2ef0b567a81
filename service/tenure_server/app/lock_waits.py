"""How many statements of a process may wait on lease rows that other transactions hold.

A fenced transaction holds its lease row FOR SHARE while it writes, and a renew of that row waits
for it on a pooled connection, until it commits or the lock timeout. Statements that wait are
only sent for rows that a statement which never waits found locked; but many requests, from many
clients, may find locked rows at once, and were each to wait on a connection they would hold the
whole pool, so that every other request of the process waited for one. So at most `limit` of
them wait on a row at once, each in a place (its pool is the process's own); the others wait for
a place, holding no connection. A row locked only by another statement is free within
milliseconds, and the places pass quickly from one to the next; one that gets no place within
`patience` (the lock timeout) is answered as if its row had stayed locked that long: retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tenure_server.domain.errors import StorageUnavailable

DEFAULT_LOCK_WAITS = 2


class LockWaits:
    def __init__(self, limit: int = DEFAULT_LOCK_WAITS, patience: float | None = None) -> None:
        """`limit` places (0: no statement waits on a locked row, each is answered at once);
        `patience`: the longest wait for a place, in seconds (None: as long as it takes)."""
        if limit < 0:
            raise ValueError("the lock-wait limit must be at least 0")
        self._limit = limit
        self._places = asyncio.Semaphore(limit)
        self._patience = patience

    @asynccontextmanager
    async def place(self, name: str) -> AsyncIterator[None]:
        """A place to wait on `name`'s row lock, or StorageUnavailable (retry) when none came
        free in time."""
        try:
            if self._limit == 0:
                raise TimeoutError
            async with asyncio.timeout(self._patience):
                await self._places.acquire()
        except TimeoutError:
            raise StorageUnavailable(
                f"lease {name!r}: its row is locked by another transaction, and this process "
                "already waits on as many locked rows as it may; retry"
            ) from None
        try:
            yield
        finally:
            self._places.release()
