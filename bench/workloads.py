"""What each workload does, named once for every system that runs it (the HTTP services through
wrk or loadgen.py, raw_asyncpg.py, pgbench), and the numbers a measurement yields."""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

HOLDER = "bench"
TTL_SECONDS = 60.0
# Leases held before a run (database.prefill): renewed at random, verified against, claimed under.
RENEW_PREFIX, RENEW_POOL = "rn-", 1000  # names rn-0-<n>
FENCE_LEASE = "fl-0-0"
FENCE_RESOURCES = 1000  # resources fr-<n>
WINDOW_LEASE_PREFIX, WINDOW_LEASES = "cw-", 64  # cw-0-<connection>, one lease per connection
# Batch renew: each connection renews its own BATCH_SIZE leases rb-<connection>-<n> together.
BATCH_PREFIX, BATCH_SIZE, BATCH_CONNECTIONS = "rb-", 100, 64
# Batch verify: each connection verifies FENCE_LEASE on its own BATCH_SIZE resources
# fb-<connection>-<n> together.
BATCH_FENCE_PREFIX = "fb-"


def batch_resources(connection: int) -> list[str]:
    return [f"{BATCH_FENCE_PREFIX}{connection}-{k}" for k in range(BATCH_SIZE)]


# A JSON file of the statements as they were when the run started (run.py writes it), so that
# every process of a run uses the same SQL as the service it started, even if its SQL files are
# edited meanwhile.
QUERIES_ENV = "BENCH_QUERIES"


def queries() -> Mapping[str, str]:
    snapshot = os.environ.get(QUERIES_ENV)
    if snapshot:
        loaded: dict[str, str] = json.loads(Path(snapshot).read_text())
        return loaded
    from tenure_server.db import fences, leases, windows

    return {**leases.QUERIES, **windows.QUERIES, **fences.QUERIES}


# How the benchmark calls the service's statements, in $n order; None is SQL NULL. When a
# statement's parameters change (service/tenure_server/db/sql/), change them here:
# check_statements() refuses a mismatch before anything runs.
def acquire_args(name: object, holder: object, ttl: object) -> tuple[object, ...]:
    return (name, holder, ttl, None)  # $4 principal


def renew_args(name: object, holder: object, generation: object, ttl: object) -> tuple[object, ...]:
    return (name, holder, generation, ttl, None)  # $5 principal


def renew_many_args(
    names: object, generations: object, holder: object, ttl: object
) -> tuple[object, ...]:
    return (names, generations, holder, ttl, None)  # $5 principal


def release_args(
    name: object, holder: object, generation: object, grant: object
) -> tuple[object, ...]:
    return (name, holder, generation, None, grant)  # $4 principal


def window_args(
    job: object, window: object, lease: object, holder: object, generation: object
) -> tuple[object, ...]:
    return (job, window, lease, holder, generation, None)  # $6 principal


def claim_args(
    job: object, window: object, lease: object, holder: object, generation: object
) -> tuple[object, ...]:
    # $7 no occurrence (due at any time, as for an unregistered job), $8 the early tolerance
    return (*window_args(job, window, lease, holder, generation), None, 0)


def verify_args(resource: object, lease: object, generation: object) -> tuple[object, ...]:
    return (resource, lease, generation)


def verify_many_args(resources: object, leases: object, generations: object) -> tuple[object, ...]:
    return (resources, leases, generations)


ARITY = {
    "acquire_lease": len(acquire_args("", "", 0)),
    "renew_lease": len(renew_args("", "", 0, 0)),
    "renew_leases": len(renew_many_args([], [], "", 0)),
    "release_lease": len(release_args("", "", 0, "")),
    "claim_window": len(claim_args("", "", "", "", 0)),
    "complete_window": len(window_args("", "", "", "", 0)),
    "verify_fence": len(verify_args("", "", 0)),
    "verify_fences": len(verify_many_args([], [], [])),
}


def check_statements(statements: Mapping[str, str]) -> None:
    """Refuse to run when a statement takes other parameters than the benchmark passes."""
    for name, arity in ARITY.items():
        code = "\n".join(
            line for line in statements[name].splitlines() if not line.lstrip().startswith("--")
        )
        taken = max((int(n) for n in re.findall(r"\$(\d+)", code)), default=0)
        if taken != arity:
            raise SystemExit(
                f"{name} takes {taken} parameters, the benchmark passes {arity}; "
                "update bench/workloads.py"
            )


@dataclass(frozen=True)
class Measurement:
    """One timed run of one workload: operations (a cycle counts once) and their latencies."""

    ops: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int = 0
    app_cpu_seconds: float | None = None  # the service's (or raw client's) processes
    db_cpu_seconds: float | None = None  # PostgreSQL's processes

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Measurement:
        return cls(**json.loads(text))


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def summarize(latencies: list[float], seconds: float, errors: int) -> Measurement:
    """Latencies in seconds, one per operation."""
    ordered = sorted(latencies)
    return Measurement(
        ops=len(ordered),
        seconds=seconds,
        p50_ms=statistics.median(ordered) * 1000 if ordered else 0.0,
        p99_ms=percentile(ordered, 0.99) * 1000,
        errors=errors,
    )


def median_of(runs: list[Measurement]) -> Measurement:
    """Medians over runs, each figure on its own (ops/s, p50, p99, CPU per operation)."""

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    rates = [run.rate for run in runs]
    app = [run.app_cpu_seconds / run.ops for run in runs if run.app_cpu_seconds and run.ops]
    db = [run.db_cpu_seconds / run.ops for run in runs if run.db_cpu_seconds and run.ops]
    ops = round(med(rates))
    return Measurement(
        ops=ops,
        seconds=1.0,
        p50_ms=med([run.p50_ms for run in runs]),
        p99_ms=med([run.p99_ms for run in runs]),
        errors=sum(run.errors for run in runs),
        app_cpu_seconds=med(app) * ops if app else None,
        db_cpu_seconds=med(db) * ops if db else None,
    )
