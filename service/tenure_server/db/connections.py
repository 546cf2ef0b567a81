"""The one place that talks to asyncpg: a pooled connection per statement, with driver errors
translated by SQLSTATE class into `StorageUnavailable`; every other failure is a bug and
propagates. The repositories of each aggregate (leases, windows, fences, health) build on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import fields
from typing import TYPE_CHECKING, Any

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


class Connections:
    """Pooled connections; the base of every repository of the package."""

    def __init__(self, pool: asyncpg.Pool[Record], acquire_timeout: float) -> None:
        self._pool = pool
        self._acquire_timeout = acquire_timeout

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.pool.PoolConnectionProxy[Record]]:
        try:
            connection = await self._pool.acquire(timeout=self._acquire_timeout)
        except (asyncpg.PostgresError, OSError, TimeoutError, asyncpg.InterfaceError) as error:
            # Whatever the database said while we were connecting, it cannot serve us now.
            raise StorageUnavailable(f"database unavailable: {type(error).__name__}") from error
        try:
            yield connection
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
            with suppress(
                asyncpg.PostgresError,
                OSError,
                TimeoutError,
                asyncpg.InterfaceError,
                asyncpg.InternalClientError,
            ):
                await self._pool.release(connection, timeout=self._acquire_timeout)

    def connection(self) -> AbstractAsyncContextManager[asyncpg.pool.PoolConnectionProxy[Record]]:
        """A pooled connection with the driver errors translated as here, for the package's other
        repositories (jobs, monitoring), so that the translation lives in one place."""
        return self._connection()

    async def _fetchrow(self, statement: str, *args: Any) -> Record | None:
        async with self._connection() as connection:
            return await connection.fetchrow(statement, *args)

    async def _fetch(self, statement: str, *args: Any) -> list[Record]:
        async with self._connection() as connection:
            return await connection.fetch(statement, *args)
