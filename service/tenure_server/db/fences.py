"""Runs the statements of `sql/fences.sql`: one method per statement, named after it. Whether a
verify passes, single or batched, is decided by the functions of migration 0008 they call."""

from __future__ import annotations

from collections.abc import Sequence

from tenure_server.db.connections import Connections, Record, columns
from tenure_server.db.sql import load
from tenure_server.domain.events import FenceEvent
from tenure_server.domain.fences import Fence, VerifyFacts
from tenure_server.domain.requests import Verify

QUERIES = load("fences.sql")


class Fences(Connections):
    async def verify_fence(self, resource: str, lease: str, generation: int) -> Fence | None:
        return _fence(await self._fetchrow(QUERIES["verify_fence"], resource, lease, generation))

    async def verify_fences(self, verifies: list[Verify]) -> dict[str, Fence]:
        """The fences that accepted their verify, by resource; refused verifies have none."""
        rows = await self._fetch(QUERIES["verify_fences"], *columns(verifies))
        # Its columns are Fence's, in order: each row is one, built in C (a batch's hundreds).
        return {row[0]: Fence._make(row) for row in rows}

    async def explain_fences(self, verifies: list[Verify]) -> list[VerifyFacts]:
        """For each verify, in order, the facts it was decided by: why it was refused, or that
        it would pass now. A read taken after refusals."""
        rows = await self._fetch(QUERIES["explain_fences"], *columns(verifies))
        found = {row["wanted"]: row for row in rows}
        return [_verify_facts(found[verify.resource]) for verify in verifies]

    async def record_fence_rejections(self, rejections: Sequence[FenceEvent]) -> None:
        """History only: the refused verifies (each event's `rejection` is set)."""
        await self._fetch(QUERIES["record_fence_rejections"], *columns(rejections))


def _fence_of(row: Record) -> Fence:
    return Fence(
        resource=row["resource"],
        lease=row["lease"],
        highest=row["highest_generation"],
        updated_at=row["updated_at"],
    )


def _fence(row: Record | None) -> Fence | None:
    return None if row is None else _fence_of(row)


def _verify_facts(row: Record) -> VerifyFacts:
    return VerifyFacts(
        fence=_fence_of(row) if row["resource"] is not None else None,
        lease_generation=row["lease_generation"],
        accepted=row["accepted"],
        bound_elsewhere=row["bound_elsewhere"],
        unknown=row["unknown"],
        stale=row["stale"],
        highest=row["highest"],
        forced=row["forced"],
    )
