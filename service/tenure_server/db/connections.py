"""The one place that talks to asyncpg: a pooled connection per statement, with driver errors
translated by SQLSTATE class into `StorageUnavailable`; every other failure is a bug and
propagates. The repositories of each aggregate (leases, windows, fences, health) build on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg

from tenure_server.domain.errors import StorageUnavailable

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# SQLSTATE classes that mean "the database cannot answer now; the same request may succeed
# later": connection exceptions, transaction rollback (serialization failure, deadlock),
# insufficient resources, operator intervention (query canceled by statement_timeout, admin
# shutdown), and lock_not_available (lock_timeout).
_RETRYABLE_CLASSES = ("08", "40", "53", "57")
_RETRYABLE_STATES = ("55P03",)


def _retryable(error: asyncpg.PostgresError) -> bool:
    state = error.sqlstate or ""
    return state[:2] in _RETRYABLE_CLASSES or state in _RETRYABLE_STATES


Record = asyncpg.Record


def columns(requests: Sequence[DataclassInstance] | Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Requests (or events) of one dataclass or named tuple as the arrays their statement
    takes: one per field, in field order, which is the statement's $n order."""
    if isinstance(requests[0], tuple):  # transposed in C: a batch verify's hundreds
        return [list(column) for column in zip(*requests, strict=True)]
    names = [field.name for field in fields(requests[0])]
    return [[getattr(request, name) for request in requests] for name in names]


# What giving a connection back may raise where it died meanwhile (asyncpg's pool has then
# closed it, to replace it).
_RELEASE_ERRORS = (
    asyncpg.PostgresError,
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
)

# A connection of the pool, as asyncpg hands it out.
Pooled: TypeAlias = "asyncpg.pool.PoolConnectionProxy[Record]"


def _open(connection: Pooled) -> bool:
    """Whether a kept connection can still run a statement. One whose socket closed (the server
    ended its session) asyncpg's pool has usually taken back already, to replace it."""
    try:
        return not connection.is_closed()
    except asyncpg.InterfaceError:  # released by the pool, as closed
        return False


class Pool:
    """asyncpg's pool, with up to its `min_size` connections kept at hand between statements.

    Through asyncpg's pool a statement pays about 40 µs of CPU and 45 µs of latency to take a
    connection and give it back (a timeout and a timer per acquire, a task and a timeout per
    release; bench/README.md, step 29), more than an idle service's whole statement costs
    asyncpg. A connection whose statement ended cleanly, outside a transaction, is kept here
    instead, and the next statement takes it without the pool; any other goes back to the
    pool, whose release rolls back, waits out a cancellation or replaces a broken connection,
    and so does every connection while a statement waits in the pool for one (it would wait
    while newer statements took the kept connections).
    The pool keeps `min_size` connections open anyway, so keeping as many opens none more; the
    kept ones count as idle."""

    def __init__(self, pool: asyncpg.Pool[Record]) -> None:
        self.asyncpg = pool
        self._kept: list[Pooled] = []
        # Statements waiting in asyncpg's pool for a connection: while there are any, none is
        # kept (a waiter only waits when nothing was kept, so it is served next).
        self._waiting = 0
        self._closing = False

    async def take(self, patience: float) -> Pooled:
        """A kept connection, else one of the pool's (waiting at most `patience` seconds)."""
        while self._kept:
            connection = self._kept.pop()
            if _open(connection):
                return connection
            # The pool replaces it (a no-op where it already took it back).
            await self.asyncpg.release(connection, timeout=patience)
        self._waiting += 1
        try:
            return await self.asyncpg.acquire(timeout=patience)
        finally:
            self._waiting -= 1

    async def give_back(self, connection: Pooled, *, clean: bool, patience: float) -> None:
        """Keeps a connection whose statement ended `clean` while there is room; else gives it
        back to the pool. (One that closed after its statement is dropped when next taken.)"""
        if (
            clean
            and not self._closing
            and len(self._kept) < self.asyncpg.get_min_size()
            and not self._waiting
            and not connection.is_in_transaction()
        ):
            self._kept.append(connection)
            return
        await self.asyncpg.release(connection, timeout=patience)

    def get_size(self) -> int:
        return self.asyncpg.get_size()

    def get_idle_size(self) -> int:
        return self.asyncpg.get_idle_size() + sum(map(_open, self._kept))

    def get_max_size(self) -> int:
        return self.asyncpg.get_max_size()

    def acquire(self) -> asyncpg.pool.PoolAcquireContext[Record]:
        """asyncpg's `acquire()`, past the kept connections: a connection for a session of
        its own (a test's)."""
        return self.asyncpg.acquire()

    async def close(self) -> None:
        """Gives the kept connections back, then closes the pool (which waits for the rest)."""
        self._closing = True
        kept, self._kept = self._kept, []
        for connection in kept:
            with suppress(*_RELEASE_ERRORS):  # one that died is replaced: nothing to give back
                await self.asyncpg.release(connection)
        await self.asyncpg.close()


class Connections:
    """Pooled connections; the base of every repository of the package."""

    def __init__(self, pool: Pool, acquire_timeout: float) -> None:
        self._pool = pool
        self._acquire_timeout = acquire_timeout

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Pooled]:
        try:
            connection = await self._pool.take(self._acquire_timeout)
        except (asyncpg.PostgresError, OSError, TimeoutError, asyncpg.InterfaceError) as error:
            # Whatever the database said while we were connecting, it cannot serve us now.
            raise StorageUnavailable(f"database unavailable: {type(error).__name__}") from error
        clean = False
        try:
            yield connection
            clean = True
        except asyncpg.PostgresError as error:
            if not _retryable(error):
                raise
            raise StorageUnavailable(f"database refused: {error.sqlstate}") from error
        except (OSError, asyncpg.InterfaceError, asyncpg.InternalClientError) as error:
            # The connection broke mid-statement (ConnectionDoesNotExistError and the like; a
            # connection the server shut down can also be left in a state asyncpg refuses).
            raise StorageUnavailable(f"database connection lost: {type(error).__name__}") from error
        finally:
            # Release resets the connection; when that fails (it died after the statement), the
            # pool has closed and replaced it, and the answer or error above must stand.
            with suppress(*_RELEASE_ERRORS):
                await self._pool.give_back(connection, clean=clean, patience=self._acquire_timeout)

    def connection(self) -> AbstractAsyncContextManager[Pooled]:
        """A pooled connection with the driver errors translated as here, for the package's other
        repositories (jobs, monitoring), so that the translation lives in one place."""
        return self._connection()

    async def _fetchrow(self, statement: str, *args: Any) -> Record | None:
        async with self._connection() as connection:
            return await connection.fetchrow(statement, *args)

    async def _fetch(self, statement: str, *args: Any) -> list[Record]:
        async with self._connection() as connection:
            return await connection.fetch(statement, *args)
