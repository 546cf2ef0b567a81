"""The negative controls: the harness run with a deliberately broken variant (`chaos.variants`)
must report violations of the property that variant breaks — proof the checker is not vacuous.
The failover control has a twin that keeps it honest: the same run with a synchronous standby
(the same nemesis, seed and workload) must report none.

The default run keeps one control end to end (key-share) and the failover twin; the other
controls are marked `chaos_long` (`scripts/test -m chaos_long`, tests/README.md). What they would
add to every run is covered there already: tests/chaos/test_checker.py reports each property's
minimal violating history, and test_clock_jumps.py's strict checker finds real overlap."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from chaos.lab import Options
from chaos.run import Result, execute

pytestmark = pytest.mark.slow

SHORTEST = 6.0  # an attempt shorter than this is not worth starting


class Control(NamedTuple):
    faults: tuple[str, ...]
    broken: int  # the property the variant breaks
    # Seconds of workload per attempt (one reports violations on a loaded 2-core box), about
    # what an attempt needs beyond it (start, final checks, facts), and the bound of the control,
    # start-up and every attempt included.
    duration: float = 12.0
    start_up: float = 12.0
    bound: float = 40.0
    long: bool = True  # run only with `-m chaos_long` (20-30 s each)


CONTROLS: dict[str, Control] = {
    # FOR KEY SHARE does not block the takeover's row update: the default run's representative.
    "key-share": Control((), 4, long=False),
    "check-then-write": Control((), 4),  # no row lock: the takeover slips between check and write
    "arrival-deadline": Control((), 3),  # the belief outlives the expiry by the answer's delay
    "async-commit": Control(("F4",), 5),  # an acknowledged generation lost by an immediate crash
    # The promoted asynchronous standby hands out again a generation acknowledged during the
    # stall. One failover fits in 15 s (it is planned as its stall + 5 s, after a tail of 6 s);
    # the standby and its clone lengthen the start-up.
    "async-replication": Control(("F10",), 1, duration=15.0, start_up=20.0, bound=60.0),
}


def attempt(variant: str, control: Control, seed: int, run: Path, left: float) -> Result:
    """One bounded run of `variant`, given `left` seconds of the control's bound."""
    duration = min(control.duration, left - control.start_up)
    options = Options(
        duration=duration,
        workers=6,
        faults=control.faults,
        seed=seed,
        variant=variant,
        ttl_min=0.5,
        ttl_max=1.0,
    )
    return asyncio.run(execute(options, run, overrun=max(1.0, left - duration)))


@pytest.mark.timeout(max(control.bound for control in CONTROLS.values()) + 30)
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(name, marks=[pytest.mark.chaos_long] if control.long else [])
        for name, control in sorted(CONTROLS.items())
    ],
)
def test_broken_variant_reports_violations(variant: str, run_dir: Path) -> None:
    """Each broken variant reports violations of the property it breaks, within its bound."""
    control = CONTROLS[variant]
    began, seed, found = time.monotonic(), 1, 0
    while not found:
        left = control.bound - (time.monotonic() - began)
        if left - control.start_up < SHORTEST:
            break
        result = attempt(variant, control, seed, run_dir / f"attempt-{seed}", left)
        found = result.verdict.count(control.broken)
        seed += 1
    assert found > 0, f"{variant}: no violation of property {control.broken} in {control.bound:g} s"
    assert time.monotonic() - began <= control.bound


@pytest.mark.timeout(CONTROLS["async-replication"].bound + 30)
def test_failover_to_a_synchronous_standby_loses_nothing(run_dir: Path) -> None:
    """The async-replication control's first attempt with the standby synchronous instead — the
    same nemesis (stall, crash, promotion, a new standby), seed and workload — reports no
    violation, and its failover was followed by a successful acquire."""
    control = CONTROLS["async-replication"]
    began = time.monotonic()
    result = attempt("correct", control, 1, run_dir, control.bound)
    assert [violation.message for violation in result.verdict.violations] == []
    failovers = result.summary["failovers"]
    assert failovers, "no failover happened"
    assert all(failover["first_acquire"] is not None for failover in failovers), failovers
    assert result.summary["settings"]["synchronous_standby_names"] == "FIRST 1 (chaos_standby)"
    assert time.monotonic() - began <= control.bound
