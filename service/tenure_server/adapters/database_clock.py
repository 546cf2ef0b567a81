"""The database clock watch: every replica (each worker process) reads the database's clock every
`interval_seconds` and compares how far it moved with how far its own monotonic clock did.

Every expiry is decided by the database's clock (`now()`), so a step of that clock (an NTP step,
a VM migration) moves every expiry at once: forward, holdings lapse early in real time and a
second holder can be granted while the first still believes it holds the lease; back, holdings
last longer. Nothing in a request can see it; this watch does:

- `tenure_database_clock_offset_seconds`: how far the database's clock has moved against this
  replica's monotonic clock since the replica first read it (0 at first; a step moves it by the
  step, a drifting clock slowly);
- `tenure_database_clock_jumps_total{direction}`: moves between two readings larger than
  `jump_seconds` beyond what the two readings' round trips can explain, each logged as a warning
  (`database_clock.jump`). Under `tenure serve --workers N` each worker sees the same jump.

A reading's database instant lies somewhere between the query's send and its answer, so a move is
counted only when it exceeds `jump_seconds` plus both readings' round trips.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

_log = logging.getLogger("tenure.database_clock")


class ClockSource(Protocol):
    """What the watch reads (the repository has it)."""

    async def database_now(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Reading:
    """The database's clock less the replica's monotonic clock, and how uncertain that is."""

    difference: float
    round_trip: float


class DatabaseClockMetrics:
    """The watch's metrics, registered once per app."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.offset = Gauge(
            "tenure_database_clock_offset_seconds",
            "How far the database's clock moved against this replica's monotonic clock since "
            "the replica first read it.",
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.jumps = Counter(
            "tenure_database_clock_jumps_total",
            "Steps of the database's clock seen by this replica, by direction.",
            ("direction",),
            registry=registry,
        )
        for direction in ("forward", "backward"):  # from 0, so that increase() sees the first
            self.jumps.labels(direction)


class DatabaseClockWatch:
    def __init__(
        self,
        source: ClockSource,
        metrics: DatabaseClockMetrics,
        *,
        jump_seconds: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._metrics = metrics
        self._jump_seconds = jump_seconds
        self._monotonic = monotonic
        self._first: Reading | None = None
        self._last: Reading | None = None

    async def read(self) -> Reading:
        sent = self._monotonic()
        now = await self._source.database_now()
        answered = self._monotonic()
        reading = Reading(now.timestamp() - (sent + answered) / 2, answered - sent)
        self._compare(reading)
        return reading

    def _compare(self, reading: Reading) -> None:
        first, last = self._first or reading, self._last
        self._first, self._last = first, reading
        self._metrics.offset.set(reading.difference - first.difference)
        if last is None:
            return
        moved = reading.difference - last.difference
        if abs(moved) <= self._jump_seconds + reading.round_trip + last.round_trip:
            return
        direction = "forward" if moved > 0 else "backward"
        self._metrics.jumps.labels(direction).inc()
        _log.warning(
            "the database's clock jumped %s by %.3f s: leases expire that much %s in real time",
            direction,
            abs(moved),
            "earlier" if moved > 0 else "later",
            extra={"event": "database_clock.jump", "seconds": round(moved, 6)},
        )

    @contextlib.asynccontextmanager
    async def watching(self, interval_seconds: float) -> AsyncIterator[None]:
        """Read every `interval_seconds` while inside."""
        task = asyncio.create_task(self._read_every(interval_seconds))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _read_every(self, interval_seconds: float) -> None:
        while True:
            try:
                await self.read()
            except Exception:  # the database being down is reported elsewhere (readiness)
                _log.debug("could not read the database's clock", exc_info=True)
            await asyncio.sleep(interval_seconds)
