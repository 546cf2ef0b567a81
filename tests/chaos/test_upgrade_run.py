"""The short run of a rolling upgrade: two replicas of the previous release (chaos/
previous_release), the current migrations applied while they serve, each replaced by a current
replica, then each rolled back to the previous release on the migrated schema, under the workload
and faults F1, F3 and F6. Zero violations, and no replica logged a schema error.

A minute long, it is a `chaos_long` run (`scripts/test -m chaos_long`, tests/README.md). The
default run keeps the upgrade's quicker representatives: the previous release as a process on the
current schema (test_schema_refusals.py), the previous release's statements during a migration
(tests/integration/test_grown_migration.py) and the plan of steps (test_upgrade_steps.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos.upgrade import steps

from tests.chaos.harness import run_harness

pytestmark = [pytest.mark.slow, pytest.mark.chaos_long]

DURATION = 40.0
OVERRUN = 45.0
REPLICAS = 2
WALL_BOUND = 120.0  # 60 s on a quiet 2-core machine, the virtualenv cached


@pytest.mark.timeout(DURATION + OVERRUN + 30)
def test_a_rolling_upgrade_and_its_rollback_violate_nothing(
    previous_release_tenure: Path, run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Old and new replicas side by side, on the previous and the current schema: every step
    done, every property holds, the service recovered after each step, no schema refusal."""
    argv = [
        *("--duration", str(DURATION), "--workers", "6", "--faults", "F1,F3,F6"),
        *("--replicas", str(REPLICAS), "--seed", "27", "--upgrade"),
        *("--ttl-min", "0.5", "--ttl-max", "1.0", "--overrun", str(OVERRUN)),
    ]
    ran = run_harness(argv, run_dir, capsys)
    summary = ran.summary
    assert summary["violation_messages"] == []
    assert ran.status == 0
    assert summary["faults_injected"].get("upgrade") == len(steps(REPLICAS))
    assert summary["schema_refusals"] == {}
    upgrades = [r for r in summary["recoveries"] if r["fault"] == "upgrade"]
    assert len(upgrades) == len(steps(REPLICAS))
    assert all(r["seconds"] is not None for r in upgrades)
    assert ran.wall < WALL_BOUND, f"the upgrade run took {ran.wall:.0f} s"
