"""Runs the statements of `queries.sql`: one method per statement, named after it.

This is the only place that talks to asyncpg. Driver errors are translated here, by SQLSTATE
class, into `StorageUnavailable`; every other failure is a bug and propagates.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import asyncpg

from tenure_server.db.queries import QUERIES
from tenure_server.domain.errors import StorageUnavailable
from tenure_server.domain.events import FenceEvent, LeaseEvent, LeaseEventKind
from tenure_server.domain.fences import Fence, LeaseGeneration
from tenure_server.domain.leases import Lease
from tenure_server.domain.windows import Holding, LeaseState, Window

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


@dataclass(frozen=True, slots=True)
class Acquire:
    """One acquire request, as acquire_lease takes it: fields in its $n order, as
    acquire_leases takes their arrays."""

    name: str
    holder: str
    ttl: float
    principal: str | None


@dataclass(frozen=True, slots=True)
class Renew:
    """One renew request, as renew_lease takes it: fields in its $n order, as renew_coalesced
    takes their arrays."""

    name: str
    holder: str
    generation: int
    ttl: float
    principal: str | None


@dataclass(frozen=True, slots=True)
class Release:
    """One release request, as release_lease takes it: fields in its $n order, as
    release_coalesced takes their arrays."""

    name: str
    holder: str
    generation: int
    principal: str | None
    grant: str


@dataclass(frozen=True, slots=True)
class Verify:
    """One verify of a fence, as verify_fence takes it: fields in its $n order, as
    verify_fences takes their arrays."""

    resource: str
    lease: str
    generation: int

    @property
    def name(self) -> str:
        """What two verifies in one statement must not share: the fence."""
        return self.resource


# The lease, and the event when the acquire began a new holding (None: it extended one).
Acquired = tuple[Lease, LeaseEvent | None]


def _columns(
    requests: Sequence[Acquire | Renew | Release | Verify | FenceEvent],
) -> list[list[Any]]:
    """Coalesced requests (or events) as the arrays their statement takes: one per field, in
    field order, which is the statement's $n order."""
    names = [field.name for field in fields(requests[0])]
    return [[getattr(request, name) for request in requests] for name in names]


class Repository:
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

    async def _fetchrow(self, query: str, *args: Any) -> Record | None:
        async with self._connection() as connection:
            return await connection.fetchrow(QUERIES[query], *args)

    async def _fetch(self, query: str, *args: Any) -> list[Record]:
        async with self._connection() as connection:
            return await connection.fetch(QUERIES[query], *args)

    async def acquire_lease(
        self, name: str, holder: str, ttl: float, principal: str | None
    ) -> Acquired | None:
        """The lease, and the event when this call began a new holding (None: extended)."""
        row = await self._fetchrow("acquire_lease", name, holder, ttl, principal)
        return None if row is None else _acquired(row)

    async def acquire_leases(self, wanted: list[Acquire]) -> dict[str, Acquired]:
        """Acquires of distinct names in one statement: what each acquired name got. A name left
        out was refused or skipped (its row was locked); acquire_lease decides it."""
        rows = await self._fetch("acquire_leases", *_columns(wanted))
        return {row["name"]: _acquired(row) for row in rows}

    async def renew_lease(
        self, name: str, holder: str, generation: int, ttl: float, principal: str | None
    ) -> Lease | None:
        return _lease(await self._fetchrow("renew_lease", name, holder, generation, ttl, principal))

    async def renew_coalesced(self, renews: list[Renew]) -> dict[str, Lease]:
        """Renews of distinct names that arrived together, in one statement: the leases it
        renewed, by name. A name it left out was refused or its row was locked."""
        rows = await self._fetch("renew_coalesced", *_columns(renews))
        return {lease.name: lease for lease in _leases(rows)}

    async def renew_leases(
        self,
        holdings: list[tuple[str, int]],
        holder: str,
        ttl: float,
        principal: str | None,
    ) -> tuple[list[Lease], set[str]]:
        """The leases renewed, and the names of those refused (already lost). A holding in
        neither was skipped, its row locked by another transaction: renew_lease decides it."""
        names = [name for name, _ in holdings]
        generations = [generation for _, generation in holdings]
        answered = _leases(
            await self._fetch("renew_leases", names, generations, holder, ttl, principal)
        )
        # The statement answers a refusal with the lease as it is and no grant.
        renewed = [lease for lease in answered if lease.grant_id is not None]
        return renewed, {lease.name for lease in answered if lease.grant_id is None}

    async def release_lease(
        self,
        name: str,
        holder: str,
        generation: int,
        principal: str | None,
        grant: str,
    ) -> Lease | None:
        return _lease(
            await self._fetchrow("release_lease", name, holder, generation, principal, grant)
        )

    async def release_coalesced(self, releases: list[Release]) -> dict[str, Lease]:
        """Releases of distinct names that arrived together, in one statement: the leases it
        released, by name. A name it left out was refused or its row was locked."""
        rows = await self._fetch("release_coalesced", *_columns(releases))
        return {lease.name: lease for lease in _leases(rows)}

    async def await_lease(self, name: str, seconds: float) -> None:
        async with self._connection() as connection:
            await connection.execute(QUERIES["await_lease"], name, seconds)

    async def force_release_lease(self, name: str, actor: str) -> Lease | None:
        return _lease(await self._fetchrow("force_release_lease", name, actor))

    async def get_lease(self, name: str) -> Lease | None:
        return _lease(await self._fetchrow("get_lease", name))

    async def list_leases(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Lease]:
        return _leases(await self._fetch("list_leases", after, prefix, prefix_end, limit))

    async def claim_window(self, job: str, window: str, holding: Holding) -> Window | None:
        return _window(await self._fetchrow("claim_window", job, window, *_holding(holding)))

    async def complete_window(self, job: str, window: str, holding: Holding) -> Window | None:
        return _window(await self._fetchrow("complete_window", job, window, *_holding(holding)))

    async def explain_window(
        self, job: str, window: str, holding: Holding
    ) -> tuple[Window | None, LeaseState]:
        """The window as it is, and what became of the holding named."""
        row = await self._fetchrow("explain_window", job, window, *_holding(holding))
        assert row is not None  # the query always yields one row (LEFT JOIN on a constant)
        state = LeaseState(held=bool(row["lease_held"]), foreign=bool(row["lease_foreign"]))
        return (_window(row) if row["job"] is not None else None), state

    async def get_window(self, job: str, window: str) -> Window | None:
        return _window(await self._fetchrow("get_window", job, window))

    async def list_windows(self, job: str, before: str | None, limit: int) -> list[Window]:
        return [_window_of(row) for row in await self._fetch("list_windows", job, before, limit)]

    async def verify_fence(self, resource: str, lease: str, generation: int) -> Fence | None:
        return _fence(await self._fetchrow("verify_fence", resource, lease, generation))

    async def verify_fences(self, verifies: list[Verify]) -> dict[str, Fence]:
        """The fences that accepted their verify, by resource; refused verifies have none."""
        rows = await self._fetch("verify_fences", *_columns(verifies))
        return {row["resource"]: _fence_of(row) for row in rows}

    async def explain_fences(
        self, verifies: list[Verify]
    ) -> list[tuple[Fence | None, LeaseGeneration | None]]:
        """For each verify, in order: its fence as it is (None: none yet), and its lease's
        current generation (None: no such lease). A read taken after refusals, to say why."""
        resources, leases, _ = _columns(verifies)
        rows = await self._fetch("explain_fences", resources, leases)
        found = {row["wanted"]: row for row in rows}
        return [
            (
                _fence(found[r]) if found[r]["resource"] is not None else None,
                _lease_generation(found[r]),
            )
            for r in resources
        ]

    async def record_fence_rejections(self, rejections: Sequence[FenceEvent]) -> None:
        """History only: the refused verifies (each event's `rejection` is set)."""
        await self._fetch("record_fence_rejections", *_columns(rejections))

    async def applied_migrations(self) -> list[int]:
        return [row["version"] for row in await self._fetch("applied_migrations")]

    async def database_now(self) -> datetime:
        row = await self._fetchrow("database_now")
        assert row is not None
        now: datetime = row["now"]
        return now

    async def synchronous_commit(self) -> str:
        row = await self._fetchrow("synchronous_commit")
        assert row is not None
        return str(row[0])


def _acquired(row: Record) -> Acquired:
    facts = dict(row)
    new, took_over, previous = (
        facts.pop("new_holding"),
        facts.pop("took_over"),
        facts.pop("previous_holder"),
    )
    lease = Lease(**facts)
    if not new:
        return lease, None
    kind: LeaseEventKind = "taken_over" if took_over else "acquired"
    # A new row (no previous holder) starts above the generation floor, after no generation.
    before = None if previous is None else lease.generation - 1
    return lease, LeaseEvent(kind, lease.name, lease.holder, lease.generation, previous, before)


def _holding(holding: Holding) -> tuple[str, str, int, str | None]:
    return holding.lease, holding.holder, holding.generation, holding.principal


# The statements that answer leases select Lease's fields in its order: rows are read by
# position, a third of the cost of building keyword arguments (a batch renew reads hundreds).
_LEASE_COLUMNS = Lease._fields


def _leases(rows: list[Record]) -> list[Lease]:
    if rows and tuple(rows[0].keys()) != _LEASE_COLUMNS:
        raise AssertionError(f"lease columns out of order: {tuple(rows[0].keys())}")
    return [Lease(*row) for row in rows]


def _lease(row: Record | None) -> Lease | None:
    return None if row is None else _leases([row])[0]


def _window_of(row: Record) -> Window:
    return Window(
        job=row["job"],
        window=row["window_key"],
        lease=row["lease"],
        holder=row["holder"],
        generation=row["generation"],
        attempt=row["attempts"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
    )


def _window(row: Record | None) -> Window | None:
    return None if row is None else _window_of(row)


def _fence(row: Record | None) -> Fence | None:
    return None if row is None else _fence_of(row)


def _lease_generation(row: Record) -> LeaseGeneration | None:
    if row["lease_generation"] is None:
        return None
    return LeaseGeneration(row["lease_generation"], row["lease_forced"])


def _fence_of(row: Record) -> Fence:
    return Fence(
        resource=row["resource"],
        lease=row["lease"],
        highest=row["highest_generation"],
        updated_at=row["updated_at"],
    )
