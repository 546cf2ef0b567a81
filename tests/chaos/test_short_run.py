"""The CI short run of the harness: real service replicas, database, workers and faults
(F1, F2, F3, F4, F6, F7 and F9) for under a minute; zero safety violations, and the faults bit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos.nemesis import schedule

from tests.chaos.harness import run_harness

pytestmark = pytest.mark.slow

FAULTS = "F1,F2,F3,F4,F6,F7,F9"
SEED = 11
TTL_MAX = 1.0
# Long enough for the seed's schedule to inject every fault once (F3 and F4 twice); longer runs
# repeat them (`python -m chaos.run`, chaos/README.md).
DURATION = 40.0
OVERRUN = 45.0  # start-up, the final acquires and the facts; then the run is cut short
WALL_BOUND = 120.0


def test_the_schedule_injects_every_fault() -> None:
    """The seed's schedule for this duration has each fault of the run (F9 is a topology)."""
    plan = schedule(FAULTS.split(","), DURATION, SEED, TTL_MAX)
    assert {fault.kind for fault in plan} == set(FAULTS.split(",")) - {"F9"}, plan


@pytest.mark.timeout(DURATION + OVERRUN + 30)
def test_short_run_has_no_violation_and_its_faults_bite(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A short run with pauses, kills, restarts, long fences, a storm and 3 replicas reports
    zero violations, with takeovers, refused stale writes, restarts and recovery after heals."""
    argv = [
        *("--duration", str(DURATION), "--workers", "8", "--faults", FAULTS, "--seed", str(SEED)),
        *("--ttl-min", "0.5", "--ttl-max", str(TTL_MAX), "--overrun", str(OVERRUN)),
    ]
    ran = run_harness(argv, run_dir, capsys)
    summary, status, printed, wall = ran.summary, ran.status, ran.printed, ran.wall
    assert summary["violation_messages"] == []
    assert all(count == 0 for count in summary["violations"].values())
    assert status == 0
    injected = summary["faults_injected"]
    assert {"F1", "F3", "F4", "F6", "F7"} <= set(injected), injected
    assert summary["takeovers"] > 0
    assert summary["stale_writes_refused"] > 0
    recoveries = summary["recoveries"]
    assert recoveries
    assert all(r["seconds"] is not None for r in recoveries)
    assert "3 replica(s)" in printed  # F9: clients pick one of three replicas per request
    assert "| safety property | violations |" in printed
    assert "| fault healed | first acquire after (s) |" in printed
    assert wall < WALL_BOUND, f"the short run took {wall:.0f} s"
