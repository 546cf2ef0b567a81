"""The database clock nemesis (F11) in CI: one short run whose database clock is stepped forward,
back and strobed. The safety properties hold (0 violations), and its negative control: the same
history, checked by a checker that requires no overlap (`clock=False`), shows the overlap the
forward steps cause — so the run can fail."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from chaos.checker import check
from chaos.history import load
from chaos.lab import Options
from chaos.nemesis import schedule
from chaos.run import execute

from chaos import clock

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not clock.available(), reason="faketime (libfaketime) not installed"),
]

SEED = 2
OPTIONS = Options(
    duration=22.0, workers=8, faults=("F11",), seed=SEED, ttl_min=0.5, ttl_max=1.0, leases=2
)
BOUND = 75.0  # start-up, the workload and the final checks, on a loaded 2-core machine


def test_the_schedule_steps_the_clock_forward() -> None:
    """The seed's schedule has forward steps (a forward jump or a strobe), which the negative
    control needs."""
    plan = schedule(list(OPTIONS.faults), OPTIONS.duration, SEED, OPTIONS.ttl_max)
    assert any(fault.params["mode"] in ("forward", "strobe") for fault in plan), plan


@pytest.mark.timeout(BOUND + 30)
def test_clock_jumps_break_no_safety_property_and_overlap_is_measured(run_dir: Path) -> None:
    """Under database clock steps, properties 1, 2, 4, 5, 6 and 7 hold and the overlap forward
    steps cause is excused and measured; a checker that excuses nothing finds it."""
    began = time.monotonic()
    result = asyncio.run(execute(OPTIONS, run_dir, overrun=BOUND - OPTIONS.duration))
    wall = time.monotonic() - began
    print(result.text)
    clock_figures = result.summary["clock"]
    assert clock_figures is not None
    assert clock_figures["steps"] > 0
    assert clock_figures["largest_forward"] > 0
    assert result.verdict.violations == ()
    assert result.summary["takeovers"] > 0
    strict = check(
        load(run_dir), liveness_bound=OPTIONS.ttl_max + OPTIONS.liveness_bound, clock=False
    )
    assert strict.count(3) > 0, "the clock's forward steps caused no overlap"
    assert clock_figures["overlaps"] > 0
    assert wall < BOUND, f"the run took {wall:.0f} s"
