"""What a run measured: the systems and workloads it compares, the figures of each, and the
outcomes of the scenarios; queried by the report and the targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from profiling import Profile
from sdk_cycles import SdkRun
from workloads import Measurement, median_of

if TYPE_CHECKING:  # grown.py reads the report's formatting, which reads these results
    from grown import GrownResults

SYSTEMS = ("tenure", "naive", "raw", "pgbench")
BASELINES = ("naive", "raw", "pgbench")
LABELS = {
    "tenure": "Tenure",
    "naive": "naive FastAPI",
    "raw": "raw asyncpg",
    "pgbench": "pgbench",
}
# workload -> (description, systems that run it)
WORKLOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "acquire": ("acquire, fresh random names", SYSTEMS),
    "renew": ("renew a held lease", SYSTEMS),
    "release": ("release a held lease", SYSTEMS),
    "cycle": ("acquire→release cycle (2 requests)", SYSTEMS),
    "claim_complete": ("claim+complete a window (2 requests)", ("tenure", "raw")),
    "verify": ("verify fence", ("tenure", "raw")),
    "hot": ("hot single name, re-acquired by its holder", SYSTEMS),
    "constant": ("FastAPI floor: constant answer, no database (naive app; diagnostic)", ("naive",)),
    "batch_renew": ("batch renew, 100 leases per request (leases/s)", ("tenure", "raw")),
    "batch_verify": ("batch verify, 100 resources per request (verifies/s)", ("tenure", "raw")),
}
# Workloads measured at these connection counts only (diagnostics; the others at all).
ONLY_AT: dict[str, tuple[int, ...]] = {"constant": (16,)}


def connections_of(workload: str, connections: list[int]) -> list[int]:
    only = ONLY_AT.get(workload)
    if only is None:
        return connections
    return [c for c in only if c in connections] or connections[-1:]


@dataclass
class Idle:
    leases: int
    batch: int  # leases per renew request: 1 = single renews
    seconds: float
    renews_per_second: float
    service_core_percent: float
    database_core_percent: float | None
    errors: int


@dataclass
class Results:
    command: str
    date: str
    commit: str
    machine: list[str]
    connections: list[int]
    runs: int
    seconds: float
    cells: dict[tuple[str, str, int], list[Measurement]] = field(default_factory=dict)
    failures: dict[tuple[str, str, int], str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # workload -> why it was skipped
    # Hand-offs within one service process (one worker), and across two replicas (one each).
    handoff: list[float] = field(default_factory=list)
    handoff_across: list[float] = field(default_factory=list)
    # The same hand-off by the database alone: its statements over asyncpg, no HTTP (the floor).
    handoff_floor: list[float] = field(default_factory=list)
    takeover: list[float] = field(default_factory=list)
    takeover_ttl: float = 2.0
    idle: list[Idle] = field(default_factory=list)
    floor_core_percent: float | None = None  # the service with no load at all
    profiles: list[Profile] = field(default_factory=list)
    grown: GrownResults | None = None  # the grown-database scenario
    sdk: SdkRun | None = None  # the `sdk` workload (sdk_cycles.py)
    elapsed_seconds: float = 0.0

    def median(self, workload: str, system: str, connections: int) -> Measurement | None:
        runs = self.cells.get((workload, system, connections))
        return median_of(runs) if runs else None

    def measured(self, workload: str) -> bool:
        """Whether the run has anything to say about the workload (figures, errors, a skip)."""
        keys = (*self.cells, *self.failures)
        return workload in self.missing or any(key[0] == workload for key in keys)

    def peak(self, workload: str, system: str) -> Measurement | None:
        found = [self.median(workload, system, c) for c in self.connections]
        measured = [m for m in found if m is not None and m.ops > 0]
        return max(measured, key=lambda m: m.rate) if measured else None
