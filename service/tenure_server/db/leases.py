"""Runs the statements of `sql/leases.sql` (single requests, and reads) and `sql/lease_batches.sql`
(requests that arrived together): one method per statement, named after it. Whether an
acquire, renew or release changes a lease, single or batched, is decided by the functions of
migrations 0008, 0009 and 0014 that its statements call; explain_holding answers the facts those
functions decided by."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from operator import itemgetter
from typing import Any

from tenure_server.db.connections import Connections, Record, columns
from tenure_server.db.sql import load
from tenure_server.domain.events import LeaseEvent, LeaseEventKind
from tenure_server.domain.leases import HoldingFacts, Lease
from tenure_server.domain.requests import (
    Acquire,
    Acquired,
    ForceReleased,
    HandedOver,
    Release,
    Renew,
)

QUERIES = {**load("leases.sql"), **load("lease_batches.sql")}


class Leases(Connections):
    async def acquire_lease(
        self, name: str, holder: str, ttl: float, principal: str | None
    ) -> Acquired | None:
        """The lease, and the event when this call began a new holding (None: extended)."""
        row = await self._fetchrow(QUERIES["acquire_lease"], name, holder, ttl, principal)
        return None if row is None else read_acquired(row)

    async def acquire_leases(self, wanted: list[Acquire]) -> dict[str, Acquired]:
        """Acquires of distinct names in one statement: what each acquired name got. A name left
        out was refused or skipped (its row was locked); acquire_lease decides it."""
        rows = await self._fetch(QUERIES["acquire_leases"], *columns(wanted))
        return {row["name"]: read_acquired(row) for row in rows}

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
        answered = read_leases(await self._fetch(QUERIES["renew_leases"], *arguments))
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

    async def hand_over_lease(self, release: Release, waiter: Acquire) -> HandedOver | None:
        """The lease released and, in the same statement, acquired for a waiter: a hand-off
        costs one round trip and one commit. None: nothing changed (the release was refused,
        or is to be decided alone); the waiter then acquires on its own."""
        arguments = (
            *(release.name, release.holder, release.generation, release.principal, release.grant),
            *(waiter.holder, waiter.ttl, waiter.principal),
        )
        row = await self._fetchrow(QUERIES["hand_over_lease"], *arguments)
        if row is None:
            return None
        released = Lease._make(row[_RELEASED.get(name, name)] for name in Lease._fields)
        return released, read_acquired(row)

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
        lease = read_lease(row)
        event = LeaseEvent(
            "force_released",
            lease.name,
            lease.holder,
            lease.generation,
            row["previous_holder"],
            lease.generation - 1,
            actor,
        )
        return lease, event

    async def explain_holding(
        self,
        name: str,
        holder: str | None,
        generation: int | None,
        principal: str | None,
        grant: str | None = None,
    ) -> HoldingFacts:
        """The facts an acquire, renew, release (of the holding named) or force-release (no
        holder) was decided by: why it changed nothing, or that it would pass now."""
        row = await self._fetchrow(
            QUERIES["explain_holding"], name, holder, generation, principal, grant
        )
        if row is None:
            raise RuntimeError("explain_holding returned no row")
        found = {fact: row[fact] for fact in _HOLDING_FACTS}
        lease = None if row["name"] is None else read_lease(row)
        return HoldingFacts(lease=lease, **found)

    async def get_lease(self, name: str) -> Lease | None:
        return _lease(await self._fetchrow(QUERIES["get_lease"], name))

    async def list_leases(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Lease]:
        arguments = (after, prefix, prefix_end, limit)
        return read_leases(await self._fetch(QUERIES["list_leases"], *arguments))

    async def _by_name(
        self, statement: str, requests: Sequence[Renew | Release]
    ) -> dict[str, Lease]:
        """The leases a batch statement changed, by name."""
        rows = await self._fetch(statement, *columns(requests))
        return {lease.name: lease for lease in read_leases(rows)}


# hand_over_lease answers the released holding in columns of its own, all but its name.
_RELEASED = {name: f"released_{name}" for name in Lease._fields if name != "name"}


def read_acquired(row: Record) -> Acquired:
    lease = read_lease(row)
    if not row["new_holding"]:
        return lease, None
    kind: LeaseEventKind = "taken_over" if row["took_over"] else "acquired"
    previous: str | None = row["previous_holder"]
    # A new row (no previous holder) starts above the generation floor, after no generation.
    before = None if previous is None else lease.generation - 1
    return lease, LeaseEvent(kind, lease.name, lease.holder, lease.generation, previous, before)


# The columns of explain_holding besides the lease's: HoldingFacts' fields but the lease.
_HOLDING_FACTS = tuple(field.name for field in fields(HoldingFacts) if field.name != "lease")

# Lease rows are read by column name, in any order and beside other columns. Every row of one
# answer has the same columns: where Lease's fields lie among them is found once per column list
# and kept, and each row is then read by one C-level itemgetter, as fast as reading by position
# (a batch renew reads hundreds; bench/README.md, step 8).
_Reader = Callable[[Record], tuple[Any, ...]]
_READERS: dict[tuple[str, ...], _Reader] = {}


def _reader(row: Record) -> _Reader:
    columns = tuple(row.keys())
    reader = _READERS.get(columns)
    if reader is None:
        missing = [name for name in Lease._fields if name not in columns]
        if missing or len(set(columns)) != len(columns):
            raise AssertionError(f"not one column for each field of Lease: {columns}")
        reader = itemgetter(*(columns.index(name) for name in Lease._fields))
        _READERS[columns] = reader
    return reader


def read_lease(row: Record) -> Lease:
    return Lease._make(_reader(row)(row))


def read_leases(rows: list[Record]) -> list[Lease]:
    if not rows:
        return []
    read, make = _reader(rows[0]), Lease._make
    return [make(read(row)) for row in rows]


def _lease(row: Record | None) -> Lease | None:
    return None if row is None else read_lease(row)
