"""The negative controls: the harness run with a deliberately broken variant (`chaos.variants`)
must report violations of the property that variant breaks — proof the checker is not vacuous."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from chaos.lab import Options
from chaos.run import Result, execute

pytestmark = pytest.mark.slow

BOUND = 40.0  # seconds per control, start-up and every attempt included
DURATION = 12.0  # seconds of workload per attempt (one reports violations on a loaded 2-core box)
START_UP = 12.0  # about what an attempt needs beyond its duration (start, final checks, facts)
SHORTEST = 6.0  # an attempt shorter than this is not worth starting

# variant -> (faults, the property it breaks)
CONTROLS: dict[str, tuple[tuple[str, ...], int]] = {
    "key-share": ((), 4),  # FOR KEY SHARE does not block the takeover's row update
    "check-then-write": ((), 4),  # no row lock: the takeover slips between check and write
    "arrival-deadline": ((), 3),  # the belief outlives the expiry by the answer's delay
    "async-commit": (("F4",), 5),  # an acknowledged generation lost by an immediate crash
}


def attempt(variant: str, faults: tuple[str, ...], seed: int, run: Path, left: float) -> Result:
    """One bounded run of `variant`, given `left` seconds of the control's bound."""
    duration = min(DURATION, left - START_UP)
    options = Options(
        duration=duration,
        workers=6,
        faults=faults,
        seed=seed,
        variant=variant,
        ttl_min=0.5,
        ttl_max=1.0,
    )
    return asyncio.run(execute(options, run, overrun=max(1.0, left - duration)))


@pytest.mark.timeout(BOUND + 30)
@pytest.mark.parametrize("variant", sorted(CONTROLS))
def test_broken_variant_reports_violations(variant: str, run_dir: Path) -> None:
    """Each broken variant reports violations of the property it breaks, within its bound."""
    faults, broken = CONTROLS[variant]
    began, seed, found = time.monotonic(), 1, 0
    while not found:
        left = BOUND - (time.monotonic() - began)
        if left - START_UP < SHORTEST:
            break
        result = attempt(variant, faults, seed, run_dir / f"attempt-{seed}", left)
        found = result.verdict.count(broken)
        seed += 1
    assert found > 0, f"{variant}: no violation of property {broken} within {BOUND:g} s"
    assert time.monotonic() - began <= BOUND
