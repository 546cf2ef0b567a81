"""A lease's history, the operator's overview, and the state the /metrics gauges are read from."""

from __future__ import annotations

from tenure_server.app.ports import HistoryStore
from tenure_server.app.status import Overview, StatusReader
from tenure_server.domain.history import LeaseRecord

# Leases the state gauges of /metrics are read from (the overview's default shows fewer).
GAUGED_LEASES = 1000


class History:
    def __init__(
        self, store: HistoryStore, statuses: StatusReader, stuck_after_seconds: float
    ) -> None:
        self._store = store
        self._statuses = statuses
        self._stuck_after = stuck_after_seconds

    async def lease_events(self, lease: str, before: int | None, limit: int) -> list[LeaseRecord]:
        return await self._store.lease_events(lease, before, limit)

    async def overview(self) -> Overview:
        return await self._statuses.overview(stuck_after=self._stuck_after)

    async def gauged_state(self) -> tuple[Overview, dict[str, int]]:
        """An overview without events, and the webhook backlog: what the state gauges show."""
        overview = await self._statuses.overview(
            stuck_after=self._stuck_after, lease_limit=GAUGED_LEASES, event_limit=0
        )
        return overview, await self._store.delivery_backlog()
