"""Runs the statements of `sql/leases.sql`: one method per statement, named after it. Whether an
acquire, renew or release changes a lease, single or batched, is decided by the functions of
migrations 0008 and 0009 that its statements call."""

from __future__ import annotations

from collections.abc import Sequence

from tenure_server.db.connections import Connections, Record, columns
from tenure_server.db.sql import load
from tenure_server.domain.events import LeaseEvent, LeaseEventKind
from tenure_server.domain.leases import Lease
from tenure_server.domain.requests import Acquire, Acquired, ForceReleased, Release, Renew

QUERIES = load("leases.sql")


class Leases(Connections):
    async def acquire_lease(
        self, name: str, holder: str, ttl: float, principal: str | None
    ) -> Acquired | None:
        """The lease, and the event when this call began a new holding (None: extended)."""
        row = await self._fetchrow(QUERIES["acquire_lease"], name, holder, ttl, principal)
        return None if row is None else _acquired(row)

    async def acquire_leases(self, wanted: list[Acquire]) -> dict[str, Acquired]:
        """Acquires of distinct names in one statement: what each acquired name got. A name left
        out was refused or skipped (its row was locked); acquire_lease decides it."""
        rows = await self._fetch(QUERIES["acquire_leases"], *columns(wanted))
        return {row["name"]: _acquired(row) for row in rows}

    async def renew_lease(
        self, name: str, holder: str, generation: int, ttl: float, principal: str | None
    ) -> Lease | None:
        arguments = (name, holder, generation, ttl, principal)
        return _lease(await self._fetchrow(QUERIES["renew_lease"], *arguments))

    async def renew_coalesced(self, renews: list[Renew]) -> dict[str, Lease]:
        """Renews of distinct names that arrived together, in one statement: the leases it
        renewed, by name. A name it left out was refused or its row was locked."""
        return await self._by_name(QUERIES["renew_coalesced"], renews)

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
        arguments = (names, generations, holder, ttl, principal)
        answered = _leases(await self._fetch(QUERIES["renew_leases"], *arguments))
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
        arguments = (name, holder, generation, principal, grant)
        return _lease(await self._fetchrow(QUERIES["release_lease"], *arguments))

    async def release_coalesced(self, releases: list[Release]) -> dict[str, Lease]:
        """Releases of distinct names that arrived together, in one statement: the leases it
        released, by name. A name it left out was refused or its row was locked."""
        return await self._by_name(QUERIES["release_coalesced"], releases)

    async def await_lease(self, name: str, seconds: float) -> None:
        async with self._connection() as connection:
            await connection.execute(QUERIES["await_lease"], name, seconds)

    async def force_release_lease(self, name: str, actor: str) -> ForceReleased | None:
        """The lease moved past its holding, and the event saying whose, by whom."""
        row = await self._fetchrow(QUERIES["force_release_lease"], name, actor)
        if row is None:
            return None
        facts = dict(row)
        previous = facts.pop("previous_holder")
        lease = Lease(**facts)
        event = LeaseEvent(
            "force_released",
            lease.name,
            lease.holder,
            lease.generation,
            previous,
            lease.generation - 1,
            actor,
        )
        return lease, event

    async def explain_acquire(self, name: str) -> tuple[Lease | None, int | None]:
        """The lease (None without a row), and the generation no holding of it can follow (None
        while one can): why an acquire or force-release changed nothing."""
        row = await self._fetchrow(QUERIES["explain_acquire"], name)
        if row is None:
            raise RuntimeError("explain_acquire returned no row")
        facts = dict(row)
        exhausted_at: int | None = facts.pop("exhausted_at")
        return (None if facts["name"] is None else Lease(**facts)), exhausted_at

    async def get_lease(self, name: str) -> Lease | None:
        return _lease(await self._fetchrow(QUERIES["get_lease"], name))

    async def list_leases(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Lease]:
        arguments = (after, prefix, prefix_end, limit)
        return _leases(await self._fetch(QUERIES["list_leases"], *arguments))

    async def _by_name(
        self, statement: str, requests: Sequence[Renew | Release]
    ) -> dict[str, Lease]:
        """The leases a batch statement changed, by name."""
        rows = await self._fetch(statement, *columns(requests))
        return {lease.name: lease for lease in _leases(rows)}


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


# The statements that answer leases select Lease's fields in its order: rows are read by
# position, a third of the cost of building keyword arguments (a batch renew reads hundreds).
_LEASE_COLUMNS = Lease._fields


def _leases(rows: list[Record]) -> list[Lease]:
    if rows and tuple(rows[0].keys()) != _LEASE_COLUMNS:
        raise AssertionError(f"lease columns out of order: {tuple(rows[0].keys())}")
    return [Lease(*row) for row in rows]


def _lease(row: Record | None) -> Lease | None:
    return None if row is None else _leases([row])[0]
