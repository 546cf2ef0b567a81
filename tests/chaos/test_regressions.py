"""Regressions found by the harness: they must not reproduce (real `tenure serve`, real
PostgreSQL, bounded)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from chaos import repro_abandoned_acquire, repro_stale_release

pytestmark = pytest.mark.slow

# Both scenarios take about 3 s plus start-up; the bound leaves room on a loaded machine and
# stays under the per-test timeout so the teardown always runs.
BOUND = 90.0
# The retry race is timing-dependent (it reproduced in 3 of 7 runs before the fix): repeat it.
ROUNDS = 3


@pytest.mark.timeout(BOUND + 20)
def test_abandoned_waiting_acquire_never_releases_a_regranted_holding(run_dir: Path) -> None:
    """An abandoned waiting acquire never releases the holding its holder's retry (same TTL) or
    shorter-TTL acquire was just granted: nobody else gets the lease within the told TTL."""

    async def bounded() -> dict[str, bool]:
        async with asyncio.timeout(BOUND):
            return await repro_abandoned_acquire.reproduce(run_dir, rounds=ROUNDS)

    results = asyncio.run(bounded())
    assert results == {"retry race": False, "shorter TTL": False}


@pytest.mark.timeout(BOUND + 20)
def test_stale_release_never_ends_a_holding_regranted_after_it_was_sent(run_dir: Path) -> None:
    """A release sent before the same holder's re-acquire never ends the holding that re-acquire
    was granted, whether the client gave up on the release or not."""

    async def bounded() -> dict[str, bool]:
        async with asyncio.timeout(BOUND):
            return await repro_stale_release.reproduce(run_dir)

    results = asyncio.run(bounded())
    assert results == {"release timed out": False, "release in flight": False}
