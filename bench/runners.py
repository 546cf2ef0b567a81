"""Load generators, each in its own process: wrk (the single-request and two-request workloads
over HTTP), loadgen.py (batch renew, the idle cost, or everything when wrk is missing) and
raw_asyncpg.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from workloads import Measurement

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
WRK = shutil.which("wrk")
# What wrk's scripts drive: one request per operation (wrk.lua), or two (wrk_steps.lua).
WRK_SCRIPTS = {
    **dict.fromkeys(("acquire", "renew", "release", "verify", "hot", "constant"), "wrk.lua"),
    **dict.fromkeys(("cycle", "claim_complete"), "wrk_steps.lua"),
}
# Seconds a load generator may take beyond its measuring time (start-up, connecting, reporting).
GRACE_SECONDS = 60


def _last_line(command: list[str], timeout: float) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{Path(command[0]).name} failed: {done.stderr[-2000:]}")
    return lines[-1]


def wrk(
    url: str,
    workload: str,
    connections: int,
    seconds: float,
    prefix: str,
    seed: int,
    grant: str | None = None,
) -> Measurement:
    if WRK is None:
        raise RuntimeError("wrk is not installed")
    command = [
        WRK,
        "--threads=1",
        f"--connections={connections}",
        f"--duration={seconds}s",
        "--timeout=10s",
        f"--script={HERE / WRK_SCRIPTS[workload]}",
        url,
        "--",
        workload,
        prefix,
        str(seed),
        *([] if grant is None else [grant]),
    ]
    report = json.loads(_last_line(command, seconds + GRACE_SECONDS))
    return Measurement(
        ops=report["ops"],
        seconds=report["duration_us"] / 1e6,
        p50_ms=report["p50_us"] / 1000,
        p99_ms=report["p99_us"] / 1000,
        errors=report["errors"],
    )


def _grant_option(grant: str | None) -> list[str]:
    """The grant of the held leases a release run names (loadgen.py and raw_asyncpg.py)."""
    return [] if grant is None else [f"--grant={grant}"]


def loadgen(
    url: str,
    workload: str,
    connections: int,
    seconds: float,
    prefix: str,
    grant: str | None = None,
) -> Measurement:
    command = [
        PYTHON,
        str(HERE / "loadgen.py"),
        f"--url={url}",
        f"--workload={workload}",
        f"--connections={connections}",
        f"--seconds={seconds}",
        f"--prefix={prefix}",
        *_grant_option(grant),
    ]
    return Measurement.from_json(_last_line(command, seconds + GRACE_SECONDS))


def http(
    url: str,
    workload: str,
    connections: int,
    seconds: float,
    prefix: str,
    seed: int,
    grant: str | None = None,
) -> Measurement:
    """wrk where it can express the workload and is installed, loadgen.py otherwise."""
    if WRK is not None and workload in WRK_SCRIPTS:
        return wrk(url, workload, connections, seconds, prefix, seed, grant)
    return loadgen(url, workload, connections, seconds, prefix, grant)


def raw_asyncpg(
    database_url: str,
    workload: str,
    connections: int,
    seconds: float,
    prefix: str,
    grant: str | None = None,
) -> Measurement:
    command = [
        PYTHON,
        str(HERE / "raw_asyncpg.py"),
        f"--url={database_url}",
        f"--workload={workload}",
        f"--connections={connections}",
        f"--seconds={seconds}",
        f"--prefix={prefix}",
        *_grant_option(grant),
    ]
    return Measurement.from_json(_last_line(command, seconds + GRACE_SECONDS))
