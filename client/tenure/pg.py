"""Fencing on PostgreSQL, with asyncpg: `import tenure.pg` needs asyncpg; `import tenure` does not.

Two tools, for two places the protected data can live.

**The protected service's own database** — `PostgresFenceStore(pool)` keeps one table,
`tenure_fences` (resource, lease, highest_generation, updated_at), created by `ensure_schema()`.
`store.transaction(resource, lease, generation)` opens a transaction, inserts the fence row if
absent, locks it `FOR UPDATE`, refuses a lower generation, advances the fence and yields the
connection: write in that same transaction, and check-and-write is one step even across many
replicas — a later check of the resource waits for the commit and then sees the new highest.
`store.connection` is the same as a FastAPI dependency, for the token `FencingMiddleware`
accepted:

    store = PostgresFenceStore(pool)
    app.add_middleware(FencingMiddleware, store=store)
    Fenced = Annotated[PoolConnectionProxy, Depends(store.connection, scope="function")]

    @app.post("/payments")
    async def pay(body: Payment, connection: Fenced) -> ...:
        await connection.execute("INSERT INTO payments …")   # same transaction as the check

`scope="function"` (FastAPI 0.121+) commits before the response is sent; the default scope
commits after it, so a client could see 201 for a write that then fails to commit.

The middleware alone, with this store, checks and advances in a transaction of its own: exact
within one process (the middleware holds a per-resource lock until the response is sent), but
across replicas NOT atomic with the handler's write — only the transaction/dependency form is.

**Tenure's own database** — when a job writes to the PostgreSQL that holds Tenure's `leases`
table, `fenced_transaction(pool, lease, holder, generation)` opens a transaction whose first
statement checks the holding with `SELECT … FOR SHARE` on the lease row (holder, generation, and
`expires_at > clock_timestamp()`, by the service's `tenure_holds_v1`) and raises `LeaseLost`
otherwise; a database older than migration 0014, which created that function, raises
`tenure.SchemaTooOld`. The share lock conflicts with the row lock every acquire, renew and
release takes, so no takeover can commit until this transaction ends: the write commits under
the holding it checked, or not at all. See
docs/fencing.md for the schema contract, why `FOR KEY SHARE` would not do, and the cost.

Both set `lock_timeout`, `statement_timeout` and `idle_in_transaction_session_timeout` for their
transaction only: a transaction stuck waiting — or a process paused inside one — must not hold
every other writer (or every acquire of the lease) forever.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Final, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from tenure._errors import LeaseLost
from tenure._fencing import (
    FenceStoreUnavailable,
    FencingTokenMissing,
    ResourceLocks,
    SchemaTooOld,
    accepted_token,
    refusal,
)
from tenure._tokens import format_token
from tenure.sql import load

__all__ = [
    "DEFAULT_ACQUIRE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_STATEMENT_TIMEOUT",
    "Connection",
    "PooledConnection",
    "PostgresFenceStore",
    "fenced_transaction",
]

Record: TypeAlias = asyncpg.Record
# asyncpg's classes are generic only in its stubs: the runtime aliases are the bare classes, so
# frameworks that evaluate annotations (FastAPI) can read them.
if TYPE_CHECKING:
    PooledConnection: TypeAlias = PoolConnectionProxy[Record]
    Connection: TypeAlias = asyncpg.Connection[Record] | PoolConnectionProxy[Record]
    Pool: TypeAlias = asyncpg.Pool[Record]
else:
    PooledConnection = PoolConnectionProxy
    Connection = asyncpg.Connection | PoolConnectionProxy
    Pool = asyncpg.Pool

QUERIES: Final = load("fences.sql")

# Seconds. A fenced transaction is meant to be short: these bound what a stuck one costs others.
DEFAULT_LOCK_TIMEOUT = 2.0  # waiting for a row lock (the fence row, the lease row, your rows)
DEFAULT_STATEMENT_TIMEOUT = 5.0  # any one statement of the transaction
DEFAULT_IDLE_TIMEOUT = 5.0  # idle inside the transaction (a paused process): session ended
DEFAULT_ACQUIRE_TIMEOUT = 5.0  # waiting for a connection from the pool

# SQLSTATEs meaning "the database cannot answer now": connection exceptions, transaction
# rollback (serialization, deadlock), insufficient resources, operator intervention (statement
# timeout, shutdown), and lock_not_available (lock timeout).
_UNAVAILABLE_CLASSES = ("08", "40", "53", "57")
_UNAVAILABLE_STATES = ("55P03",)


def _milliseconds(seconds: float | None, what: str) -> str | None:
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise TypeError(f"{what} must be a number of seconds or None")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{what} must be a positive number of seconds or None")
    return str(max(1, round(seconds * 1000)))


def _timeouts(
    lock: float | None, statement: float | None, idle: float | None
) -> tuple[str | None, str | None, str | None]:
    return (
        _milliseconds(lock, "lock_timeout"),
        _milliseconds(statement, "statement_timeout"),
        _milliseconds(idle, "idle_timeout"),
    )


@contextmanager
def _unavailable(what: str) -> Iterator[None]:
    """Driver errors that mean "cannot answer now" become `FenceStoreUnavailable`; others (a
    missing table, a bug) propagate as they are."""
    try:
        yield
    except asyncpg.PostgresError as error:
        state = error.sqlstate or ""
        if state[:2] in _UNAVAILABLE_CLASSES or state in _UNAVAILABLE_STATES:
            raise FenceStoreUnavailable(f"{what}: {type(error).__name__}: {error}") from error
        raise
    except (OSError, TimeoutError, asyncpg.InterfaceError) as error:
        raise FenceStoreUnavailable(f"{what}: {type(error).__name__}: {error}") from error


@asynccontextmanager
async def _transaction(connection: Connection) -> AsyncIterator[None]:
    """A READ COMMITTED transaction. On an error it rolls back only if the connection is still
    open, so the error raised is the one that ended the transaction (a session the server ended,
    say), not a complaint about rolling back on a closed connection."""
    transaction = connection.transaction(isolation="read_committed")
    await transaction.start()
    try:
        yield
    except BaseException:
        if not connection.is_closed():
            await transaction.rollback()
        raise
    await transaction.commit()


class PostgresFenceStore:
    """Fences in the protected service's own PostgreSQL (table `tenure_fences`).

    Guarantee: with the write in `transaction()` (or the `connection` dependency), check and
    write are atomic across every replica and connection — the fence row stays locked from the
    check until the commit, so a request with a lower generation waits and is then refused, and
    the committed writes of a resource are in non-decreasing generation order. `advance()` (what
    `FencingMiddleware` calls) checks in a transaction of its own: exact within one process,
    NOT atomic with a later write across replicas.

    It trusts the token's generation: it cannot know which generations Tenure handed out, so a
    caller able to forge `<lease>/<2**53-1>` fences out every real holder. Authenticate callers,
    or put `RemoteFenceStore`'s check in front. Never delete fence rows: the resource's
    generations would start again and a stale holder would pass.
    """

    def __init__(
        self,
        pool: Pool | Callable[[], Pool],
        *,
        lock_timeout: float | None = DEFAULT_LOCK_TIMEOUT,
        statement_timeout: float | None = DEFAULT_STATEMENT_TIMEOUT,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        acquire_timeout: float = DEFAULT_ACQUIRE_TIMEOUT,
    ) -> None:
        if not (isinstance(pool, asyncpg.Pool) or callable(pool)):
            raise TypeError("pool must be an asyncpg pool, or a function returning one")
        self._pool = pool
        self._timeouts = _timeouts(lock_timeout, statement_timeout, idle_timeout)
        if _milliseconds(acquire_timeout, "acquire_timeout") is None:
            raise ValueError("acquire_timeout must be a positive number of seconds")
        self._acquire_timeout = acquire_timeout
        self._locks = ResourceLocks()

    async def ensure_schema(self) -> None:
        """Create `tenure_fences` if it does not exist (safe to run from every replica)."""
        async with self.pool.acquire() as connection, connection.transaction():
            await connection.execute(QUERIES["ensure_schema"])

    @property
    def pool(self) -> Pool:
        """The pool: as given, or what the function given returns now."""
        return self._pool if isinstance(self._pool, asyncpg.Pool) else self._pool()

    def guard(self, resource: str) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(resource)

    async def advance(self, resource: str, lease: str, generation: int) -> int:
        """Check and advance the fence in a transaction of its own (what `FencingMiddleware`
        calls): exact within one process, not atomic with a later write across replicas."""
        with _unavailable(f"advancing the fence of {resource!r}"):
            async with self.transaction(resource, lease, generation):
                pass
        return generation

    @asynccontextmanager
    async def transaction(
        self, resource: str, lease: str, generation: int
    ) -> AsyncIterator[PooledConnection]:
        """A transaction on a pooled connection whose fence check passed; write in it. Commits
        when the block ends, rolls back if it raises. A refusal raises `StaleFencingToken` or
        `FencedByAnotherLease` before the block runs; `FenceStoreUnavailable` when the database
        cannot answer (a lock or statement timeout included)."""
        if not isinstance(resource, str) or not resource:
            raise ValueError("resource must be a non-empty string")
        format_token(lease, generation)  # ValueError/TypeError for a malformed one
        async with self._connection() as connection, _transaction(connection):
            with _unavailable(f"checking the fence of {resource!r}"):
                await connection.execute(QUERIES["set_timeouts"], *self._timeouts)
                await self._lock_and_advance(connection, resource, lease, generation)
            yield connection

    async def connection(self) -> AsyncIterator[PooledConnection]:
        """A FastAPI dependency (use `Depends(store.connection, scope="function")`): the
        `transaction()` for the token `FencingMiddleware` accepted for this request.
        `FencingTokenMissing` when none was (the middleware answers 428)."""
        request = accepted_token()
        if request is None:
            raise FencingTokenMissing(
                "no fencing token was accepted for this request: FencingMiddleware must be in "
                "front of the app and require a token for it"
            )
        async with self.transaction(request.resource, request.lease, request.generation) as c:
            yield c

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[PooledConnection]:
        with _unavailable("no database connection for the fence"):
            pool = self.pool
            connection = await pool.acquire(timeout=self._acquire_timeout)
        try:
            yield connection
        finally:
            await pool.release(connection)

    async def _lock_and_advance(
        self, connection: PooledConnection, resource: str, lease: str, generation: int
    ) -> None:
        await connection.execute(QUERIES["insert_fence"], resource, lease, generation)
        row = await connection.fetchrow(QUERIES["lock_fence"], resource)
        if row is None:  # a fence row was deleted under us: the table's contract is broken
            raise RuntimeError(f"the fence row of {resource!r} vanished; never delete them")
        refused = refusal(resource, lease, generation, row["lease"], row["highest_generation"])
        if refused is not None:
            raise refused
        if generation > row["highest_generation"]:
            await connection.execute(QUERIES["raise_fence"], resource, generation)


@asynccontextmanager
async def fenced_transaction(
    connection_or_pool: Pool | Connection,
    lease: str,
    holder: str,
    generation: int,
    *,
    lock_timeout: float | None = DEFAULT_LOCK_TIMEOUT,
    statement_timeout: float | None = DEFAULT_STATEMENT_TIMEOUT,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
) -> AsyncIterator[Connection]:
    """A transaction in Tenure's database that first checks that `holder` still holds `lease` at
    `generation` (`FOR SHARE`); raises `LeaseLost` — nothing written — if not. Write in the
    yielded connection; the transaction commits when the block ends. Needs Tenure's database
    migrated to 0014 at least (`tenure.SchemaTooOld` otherwise).

    While it is open, every acquire, renew and release of the lease waits for it: keep it short,
    never renew (nor wait for a renewal) inside it. A connection must not already be in a
    transaction. The timeouts apply to this transaction only (None keeps the session's).
    """
    format_token(lease, generation)  # ValueError/TypeError for a malformed one
    settings = _timeouts(lock_timeout, statement_timeout, idle_timeout)
    if isinstance(connection_or_pool, asyncpg.Pool):
        async with (
            connection_or_pool.acquire() as pooled,
            _fenced(pooled, lease, holder, generation, settings) as connection,
        ):
            yield connection
    else:
        async with _fenced(connection_or_pool, lease, holder, generation, settings) as connection:
            yield connection


@asynccontextmanager
async def _fenced(
    connection: Connection,
    lease: str,
    holder: str,
    generation: int,
    settings: tuple[str | None, str | None, str | None],
) -> AsyncIterator[Connection]:
    if connection.is_in_transaction():
        raise ValueError("fenced_transaction needs a connection that is not in a transaction")
    async with _transaction(connection):
        await connection.execute(QUERIES["set_timeouts"], *settings)
        try:
            held = await connection.fetchval(QUERIES["check_lease"], lease, holder, generation)
        except asyncpg.UndefinedFunctionError:
            raise SchemaTooOld("tenure_holds_v1") from None
        if held is None:
            raise LeaseLost(
                f"lease {lease!r} generation {generation} is no longer held by {holder!r} "
                "(expired, released or taken over); nothing was written",
                generation=generation,
                status=None,
            )
        yield connection
