"""The command: run the workload under the nemesis, then check the history and report.

    python -m chaos.run --duration 120 --workers 16 --faults F1,F3,F4,F6,F7 --seed 1 \\
        [--report chaos/REPORT.md] [--json result.json] [--run-dir DIR]

Everything runs on loopback, seeded, bounded in time (the run stops by itself after
`--duration` seconds plus its final checks), and every process it started is killed and its
database deleted at the end, however it ends. The history stays in the run folder (printed).
Exit status: 0 when no safety property was violated, 1 otherwise.

`--variant` runs a deliberately broken variant (`chaos.variants`) — the negative controls,
which must report violations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaos.checker import Verdict, check
from chaos.database import StopMode
from chaos.history import load
from chaos.lab import Lab, Options
from chaos.nemesis import FAULTS, Nemesis, schedule
from chaos.report import figures, markdown
from chaos.upgrade import Rollout, previous_release, previous_tenure, schema_refusals, steps
from chaos.variants import VARIANTS

# Seconds a run may take beyond its duration (start-up, the last probe, final checks) before it
# is cut short; the teardown still runs.
OVERRUN = 180.0


@dataclass(frozen=True)
class Result:
    verdict: Verdict
    summary: dict[str, Any]
    text: str
    run: Path
    seconds: float


async def _drive(lab: Lab, options: Options) -> dict[str, int]:
    await lab.start()
    started = lab.go()
    end = started + options.duration
    bound = options.ttl_max + options.liveness_bound
    crash: StopMode | None = "immediate" if options.variant == "async-commit" else None
    nemesis = Nemesis(lab.targets(), lab.recorder, options.seed, options.ttl_max, crash=crash)
    plan = schedule(list(options.faults), options.duration, options.seed, options.ttl_max)
    runs = [nemesis.run(plan, started, end, 3 * bound)]
    if options.upgrade:
        rollout = Rollout(nemesis, await asyncio.to_thread(previous_tenure))
        replicas = len(lab.targets().cluster.replicas)
        runs.append(rollout.run(steps(replicas), started, options.duration, 3 * bound))
    try:
        await asyncio.gather(*runs)
    finally:
        nemesis.close()
    await asyncio.sleep(max(0.0, end - time.monotonic()))
    await lab.finish()
    return nemesis.injected


async def execute(options: Options, run: Path, *, overrun: float = OVERRUN) -> Result:
    """One run in folder `run`: start, drive, tear down, check, summarize. The run is cut short
    `overrun` seconds after its duration (the teardown still runs)."""
    began = time.monotonic()
    lab = Lab(options, run)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        async with asyncio.timeout(options.duration + overrun):
            injected = await _drive(lab, options)
    finally:
        await lab.close()
        loop.remove_signal_handler(signal.SIGTERM)
    verdict = check(load(run), liveness_bound=options.ttl_max + options.liveness_bound)
    summary = figures(load(run), verdict, injected)
    if options.upgrade:
        summary["schema_refusals"] = schema_refusals(run)
    seconds = time.monotonic() - began
    summary["wall_seconds"] = round(seconds, 1)
    title = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC — variant {options.variant}, "
        f"{options.duration:g} s, {options.workers} workers, faults {','.join(options.faults)}, "
        f"seed {options.seed}, {options.replica_count} replica(s), wall {seconds:.0f} s"
    )
    text = markdown(summary, title)
    if options.upgrade:
        text += (
            f"\nRolling upgrade from {previous_release()[:7]} and back: "
            f"{injected.get('upgrade', 0)} steps, schema refusals {summary['schema_refusals']}\n"
        )
    return Result(verdict, summary, text, run, seconds)


def parse(argv: list[str]) -> tuple[Options, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m chaos.run", description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of workload")
    parser.add_argument("--workers", type=int, default=16, help="lease worker processes")
    parser.add_argument("--faults", default="F1,F3,F4,F6,F7", help="comma-separated F1..F11 or all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", choices=VARIANTS, default="correct")
    parser.add_argument("--ttl-min", type=float, default=0.5)
    parser.add_argument("--ttl-max", type=float, default=2.0)
    parser.add_argument("--leases", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=0)
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="start on the previous release (chaos/previous_release), migrate, replace each "
        "replica with the current one, then roll back",
    )
    parser.add_argument("--report", type=Path, help="write the summary (Markdown) here")
    parser.add_argument("--json", type=Path, help="write the figures (JSON) here")
    parser.add_argument("--run-dir", type=Path, help="folder for the history (default: a new one)")
    parser.add_argument(
        "--overrun",
        type=float,
        default=OVERRUN,
        help="seconds allowed beyond --duration before the run is cut short",
    )
    arguments = parser.parse_args(argv)
    faults = tuple(fault.strip().upper() for fault in arguments.faults.split(",") if fault.strip())
    if faults == ("ALL",):
        faults = tuple(FAULTS)
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        parser.error(f"unknown faults: {', '.join(unknown)}")
    if arguments.variant == "async-replication" and "F10" not in faults:
        parser.error("--variant async-replication needs F10 (the standby and its failover)")
    options = Options(
        duration=arguments.duration,
        workers=arguments.workers,
        faults=faults,
        seed=arguments.seed,
        variant=arguments.variant,
        ttl_min=arguments.ttl_min,
        ttl_max=arguments.ttl_max,
        leases=arguments.leases,
        replicas=arguments.replicas,
        upgrade=arguments.upgrade,
    )
    return options, arguments


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    options, arguments = parse(argv)
    run = arguments.run_dir or Path(tempfile.mkdtemp(prefix="chaos-run-"))
    run.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(execute(options, run, overrun=arguments.overrun))
    command = "python -m chaos.run " + shlex.join(argv)
    text = f"`{command}`\n\n{result.text}"
    print(text)
    print(f"history: {run}")
    if arguments.report is not None:
        arguments.report.write_text(text, encoding="utf-8")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(result.summary, indent=2), encoding="utf-8")
    return 0 if result.verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
