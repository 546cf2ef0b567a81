"""The pool gauges under several uvicorn workers: every scrape shows the whole replica's pools,
whichever worker answers, and a killed worker's figures leave the sum."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import children, tenure_service

WORKERS = 2
POOL_MAX = 3
SCRAPES = 8
SETTLE_TIMEOUT_SECONDS = 30.0
T = TypeVar("T")


def pool_max(url: str) -> float:
    # A new connection each time, so that the kernel spreads the scrapes over the workers.
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "tenure_database_pool_max_connections"
    )


def workers(supervisor: int) -> set[int]:
    """uvicorn's worker processes (its other child is multiprocessing's resource tracker); a
    child that exits meanwhile (the killed worker, reaped) is not one."""
    found = set()
    for pid in children(supervisor):
        with suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
    return found


def settle(url: str, whole: float) -> list[float]:
    """Scrape until SCRAPES scrapes in a row say `whole` (or time runs out); every figure seen."""
    seen: list[float] = []
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    while time.monotonic() < deadline and seen[-SCRAPES:] != [whole] * SCRAPES:
        seen.append(pool_max(url))
        time.sleep(0.05)
    return seen


@pytest.mark.slow
def test_pool_gauges_are_summed_over_live_workers(database_url: str, tmp_path: Path) -> None:
    """With two workers of three connections each, every scrape says 6; after one worker is
    killed (it cannot zero its own figures) and uvicorn has started another, no scrape says more
    than 6, and the replica's sum is 6 again."""
    with tenure_service(
        "--workers",
        str(WORKERS),
        database_url=database_url,
        # The folder `tenure serve` would otherwise make: here, to see when a worker has written.
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path),
        TENURE_MONITOR_ENABLED="false",
        TENURE_POOL_MIN_SIZE="1",
        TENURE_POOL_MAX_SIZE=str(POOL_MAX),
    ) as service:
        whole = float(WORKERS * POOL_MAX)
        # Ready once one worker is: the other may still be opening its pool.
        seen = settle(service.url, whole)
        assert seen[-SCRAPES:] == [whole] * SCRAPES, seen
        first = workers(service.pid)
        assert len(first) == WORKERS
        killed = min(first)
        os.kill(killed, signal.SIGKILL)
        (started,) = wait_for(lambda: workers(service.pid) - first)
        wait_for(lambda: (tmp_path / f"gauge_livesum_{started}.db").exists())
        seen = settle(service.url, whole)
        assert max(seen) <= whole, seen
        assert seen[-SCRAPES:] == [whole] * SCRAPES, seen


def wait_for(condition: Callable[[], T]) -> T:
    """The condition's first true value, polled until SETTLE_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    while not (result := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return result
