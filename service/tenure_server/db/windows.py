"""Runs the statements of `sql/windows.sql`: one method per statement, named after it."""

from __future__ import annotations

from datetime import datetime

from tenure_server.db.connections import Connections, Record
from tenure_server.db.sql import load
from tenure_server.domain.windows import (
    ANY_TIME,
    Due,
    Holding,
    NotDue,
    Schedule,
    Window,
    WindowFacts,
)

QUERIES = load("windows.sql")


class Windows(Connections):
    async def window_schedule(self, job: str) -> Schedule | None:
        row = await self._fetchrow(QUERIES["window_schedule"], job)
        if row is None:
            return None
        return Schedule(row["schedule"], row["timezone"], row["key_format"])

    async def claim_window(
        self, job: str, window: str, holding: Holding, due: Due
    ) -> Window | None:
        row = await self._fetchrow(
            QUERIES["claim_window"], job, window, *_holding(holding), *_due(due)
        )
        return _window(row)

    async def complete_window(self, job: str, window: str, holding: Holding) -> Window | None:
        row = await self._fetchrow(QUERIES["complete_window"], job, window, *_holding(holding))
        return _window(row)

    async def explain_window(
        self, job: str, window: str, holding: Holding, due: Due = ANY_TIME
    ) -> WindowFacts:
        """The window as it is, and the facts a claim or completion by the holding named was
        decided by: why it wrote nothing, or that it would pass now."""
        row = await self._fetchrow(
            QUERIES["explain_window"], job, window, *_holding(holding), *_due(due)
        )
        assert row is not None  # the query always yields one row (LEFT JOIN on a constant)
        not_due = None
        if not row["due"] and due.occurrence is not None:
            not_due = NotDue(due.occurrence, row["now"], due.tolerance)
        return WindowFacts(
            window=_window(row) if row["job"] is not None else None,
            holds=row["lease_held"],
            foreign=row["lease_foreign"],
            bound_elsewhere=row["bound_elsewhere"],
            claimed_by_holding=row["claimed_by_holding"],
            may_claim=row["may_claim"],
            may_complete=row["may_complete"],
            not_due=not_due,
        )

    async def get_window(self, job: str, window: str) -> Window | None:
        return _window(await self._fetchrow(QUERIES["get_window"], job, window))

    async def list_windows(self, job: str, before: str | None, limit: int) -> list[Window]:
        rows = await self._fetch(QUERIES["list_windows"], job, before, limit)
        return [window_of(row) for row in rows]


def _holding(holding: Holding) -> tuple[str, str, int, str | None]:
    return holding.lease, holding.holder, holding.generation, holding.principal


def _due(due: Due) -> tuple[datetime | None, float]:
    return due.occurrence, due.tolerance


def window_of(row: Record) -> Window:
    """A window from a row of job_windows' columns (the jobs repository reads them too)."""
    return Window(
        job=row["job"],
        window=row["window_key"],
        lease=row["lease"],
        holder=row["holder"],
        generation=row["generation"],
        attempt=row["attempts"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        interrupted=bool(row["interrupted"]),
    )


def _window(row: Record | None) -> Window | None:
    return None if row is None else window_of(row)
