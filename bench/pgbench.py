"""Baseline 3: `pgbench -M prepared` running the service's own statements (taken from its SQL
files, comments dropped, each `$n` replaced by a pgbench variable or a constant), so the
database's ceiling is measured without any Python at all. Latency percentiles come from
pgbench's per-transaction log."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from database import Database
from workloads import (
    HOLDER,
    RENEW_POOL,
    RENEW_PREFIX,
    TTL_SECONDS,
    Measurement,
    acquire_args,
    queries,
    release_args,
    renew_args,
    summarize,
)

WORKLOADS = ("acquire", "renew", "release", "cycle", "hot")
_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)$", re.MULTILINE)


def _statement(name: str, arguments: tuple[object, ...], end: str = ";") -> str:
    """The statement with `$n` replaced by the n-th argument (SQL text; None is NULL), ended by
    `end`."""
    lines = [line for line in queries()[name].splitlines() if not line.lstrip().startswith("--")]
    values = ["NULL::text" if value is None else str(value) for value in arguments]
    return (
        re.sub(r"\$(\d+)", lambda match: values[int(match.group(1)) - 1], "\n".join(lines))
        + end
        + "\n"
    )


def script(workload: str, prefix: str, grant: str | None = None) -> str:
    """The pgbench script of a workload; fresh names are `prefix` + a random number, released
    names `prefix<client>-<n>` in order (prefilled with `grant`; pgbench keeps :n per client).
    A cycle releases with the generation and grant its acquire answered (\\gset)."""
    holder, ttl, first = f"'{HOLDER}'", f"{TTL_SECONDS}::float8", "1::bigint"

    def acquire(name: str, end: str = ";") -> str:
        return _statement("acquire_lease", acquire_args(name, holder, ttl), end)

    def release(name: str, generation: str, grant: str) -> str:
        return _statement("release_lease", release_args(name, holder, generation, grant))

    fresh, in_order = f"('{prefix}' || :n)", f"('{prefix}' || :client_id || '-' || :n)"
    if workload == "acquire":
        return "\\set n random(0, 999999999)\n" + acquire(fresh)
    if workload == "renew":
        name = f"('{RENEW_PREFIX}0-' || :k)"
        renew = _statement("renew_lease", renew_args(name, holder, first, ttl))
        return f"\\set k random(0, {RENEW_POOL - 1})\n" + renew
    if workload == "release":
        if grant is None:
            raise ValueError("release needs the grant of the prefilled leases")
        return "\\set n :n + 1\n" + release(in_order, first, f"'{grant}'")
    if workload == "cycle":
        # \gset ends the acquire in place of its semicolon: the answer's columns become :a_<name>.
        acquired = acquire(fresh, end="\n\\gset a_")
        release_it = release(fresh, ":a_generation", ":a_grant_id")
        return "\\set n random(0, 999999999)\n" + acquired + release_it
    if workload == "hot":
        return acquire("'hot-pgbench'")
    raise ValueError(workload)


def _latencies(folder: Path) -> list[float]:
    """Seconds per transaction from the logs: `client tx latency_us script epoch epoch_us`."""
    found: list[float] = []
    for log in folder.glob("log*"):
        for line in log.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3:
                found.append(int(fields[2]) / 1e6)
    return found


def run(
    database: Database,
    workload: str,
    connections: int,
    seconds: int,
    prefix: str,
    grant: str | None = None,
) -> Measurement:
    with tempfile.TemporaryDirectory(prefix="tnbpgb") as temporary:
        folder = Path(temporary)
        (folder / "script.sql").write_text(script(workload, prefix, grant))
        command = [
            database.pgbench,
            "--no-vacuum",
            "--protocol=prepared",
            f"--file={folder / 'script.sql'}",
            f"--client={connections}",
            f"--jobs={min(connections, 2)}",
            f"--time={seconds}",
            "--define=n=-1",
            "--log",
            f"--log-prefix={folder / 'log'}",
            *database.pgbench_target,
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=folder)
        tps = _TPS.search(done.stdout)
        if done.returncode != 0 or tps is None:
            raise RuntimeError(f"pgbench failed ({done.returncode}): {done.stderr[-2000:]}")
        latencies = _latencies(folder)
    measured = summarize(latencies, 1.0, 0)
    rate = float(tps.group(1))
    return Measurement(len(latencies), len(latencies) / rate, measured.p50_ms, measured.p99_ms)
