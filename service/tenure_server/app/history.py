"""A lease's history, the operator's overview, and the state the /metrics gauges are read from."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from tenure_server.app.ports import HistoryStore
from tenure_server.app.status import Overview, StatusReader
from tenure_server.domain.history import LeaseRecord


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
        """An overview without events and alerts (the gauges count open alerts from the
        backlog), and the webhook backlog, read at once: what the state gauges show."""
        return await asyncio.gather(
            self._statuses.overview(
                stuck_after=self._stuck_after,
                lease_limit=self._statuses.limits.gauged_leases,
                event_limit=0,
                alert_limit=0,
            ),
            self._store.delivery_backlog(),
        )


# The port /metrics is scraped through, beside the state it reads (app/ports.py holds the others;
# this one names `Overview`, which the status reader builds from those ports).
class Scrape(Protocol):
    """The /metrics exposition (adapters.telemetry): counters and gauges of this replica, with
    the state gauges read by `read_state` (an overview and the webhook backlog) when stale."""

    async def scrape(
        self,
        read_state: Callable[[], Awaitable[tuple[Overview, dict[str, int]]]],
        ready: Callable[[], Awaitable[bool]],
    ) -> bytes: ...
