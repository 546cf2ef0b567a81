"""Gauges of the replica's database pools: connections in use, idle, and the pools' maximum.

Each worker process has its own pool. Under `tenure serve --workers N` a scrape is answered by
one worker, which cannot read the others' pools, so every worker writes its own figures with
prometheus-client's multiprocess mode "livesum": /metrics sums the values of the workers that
are alive, which is the replica's whole. A worker writes them when it answers a scrape and, in
between, every SAMPLE_SECONDS from a task of its own, so another worker's figures are at most that
old. Nothing is added to the acquire or renew path. Without workers the scrape's own sample is
the exact figure and no task runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import re
from collections.abc import AsyncIterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge

SAMPLE_SECONDS = 1.0
_LIVE_GAUGE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db$")


class PoolSizes(Protocol):
    """What the gauges read of a pool (asyncpg's Pool has these)."""

    def get_size(self) -> int: ...

    def get_idle_size(self) -> int: ...

    def get_max_size(self) -> int: ...


class PoolGauges:
    """The pool gauges of one app, registered in its registry."""

    def __init__(self, registry: CollectorRegistry, *, shared: bool) -> None:
        self._shared = shared
        self._connections = Gauge(
            "tenure_database_pool_connections",
            "Connections of the replica's database pools, by state (in_use, idle).",
            ("state",),
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._max_connections = Gauge(
            "tenure_database_pool_max_connections",
            "The most connections the replica's database pools may open.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._pool: PoolSizes | None = None

    def sample(self) -> None:
        """Write this process's figures (zeros when its pool is closed or not yet open)."""
        pool = self._pool
        size, idle, most = (
            (0, 0, 0)
            if pool is None
            else (pool.get_size(), pool.get_idle_size(), pool.get_max_size())
        )
        self._connections.labels("in_use").set(size - idle)
        self._connections.labels("idle").set(idle)
        self._max_connections.set(most)

    @contextlib.asynccontextmanager
    async def watching(self, pool: PoolSizes) -> AsyncIterator[None]:
        """Report `pool` while inside (sampled every SAMPLE_SECONDS too when `shared` between
        workers); zeros after, so that a worker that stopped adds nothing."""
        self._pool = pool
        self.sample()
        task = asyncio.create_task(self._sample_every(SAMPLE_SECONDS)) if self._shared else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._pool = None
            self.sample()

    async def _sample_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.sample()


def forget_dead_workers(folder: str) -> None:
    """Remove the live gauges of worker processes that no longer exist (a killed worker cannot
    zero its own), as prometheus-client's `mark_process_dead` does for a supervisor that knows.
    Two workers answering scrapes at once may both remove a file."""
    for path in glob.glob(os.path.join(folder, "gauge_live*_*.db")):
        match = _LIVE_GAUGE_FILE.search(os.path.basename(path))
        if match is not None and not _alive(int(match.group(1))):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    return True
