"""The throughput matrix: every workload × connection count × run × system, systems interleaved
within a run (in a rotating order) so that the machine's drift touches them alike."""

from __future__ import annotations

import asyncio
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import asyncpg
import pgbench
import runners
from cpu import CpuMeter
from database import Database, prefill
from results import WORKLOADS, Results, connections_of
from tests.support.processes import Server
from workloads import Measurement

# A release run consumes held leases prefilled before it, sized from the fastest rate the system
# reached so far in this run (any workload, any connections; a short acquire probe before any)
# times this margin; a run that releases the last of them fails its figure (PrefillExhausted).
PREFILL_MARGIN = 2.0
WARM_UP_SECONDS = 1


class PrefillExhausted(RuntimeError):
    """A release run released the last held lease prefilled for it: later releases named leases
    that do not exist, and the figure would count them as errors, not measure releases."""


@dataclass(frozen=True)
class Systems:
    database: Database
    tenure: Server
    naive: Server
    postmaster: int | None


def _prefix(system: str, workload: str, connections: int, run: int) -> str:
    if workload == "hot":
        return system  # one name per system, hot-<system>, across all runs
    return f"{system[:2]}{workload.replace('_', '')}{connections}x{run}-"


def _release_groups(system: str, connections: int) -> int:
    """How many name sequences a release run uses: one per connection, but wrk has one."""
    uses_wrk = system in ("tenure", "naive") and runners.WRK is not None
    return 1 if uses_wrk else connections


async def _released_last(url: str, prefix: str, groups: int, per_group: int) -> int:
    """How many sequences had their last prefilled lease released."""
    last = [f"{prefix}{group}-{per_group - 1}" for group in range(groups)]
    connection = await asyncpg.connect(url)
    try:
        query = "SELECT count(*) FROM leases WHERE name = ANY($1) AND released_at IS NOT NULL"
        count: int = await connection.fetchval(query, last)
        return count
    finally:
        await connection.close()


async def _released(url: str, prefix: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        query = "SELECT count(*) FROM leases WHERE name LIKE $1 AND released_at IS NOT NULL"
        count: int = await connection.fetchval(query, prefix + "%")
        return count
    finally:
        await connection.close()


class Matrix:
    def __init__(self, systems: Systems, results: Results, log: Callable[[str], None]) -> None:
        self.systems, self.results, self.log = systems, results, log

    def _load(
        self, system: str, workload: str, connections: int, prefix: str, grant: str | None
    ) -> Measurement:
        s, seconds = self.systems, self.results.seconds
        if system in ("tenure", "naive"):
            url = s.tenure.url if system == "tenure" else s.naive.url
            seed = zlib.crc32(prefix.encode())
            return runners.http(url, workload, connections, seconds, prefix, seed, grant)
        if system == "raw":
            return runners.raw_asyncpg(
                s.database.url, workload, connections, seconds, prefix, grant
            )
        return pgbench.run(s.database, workload, connections, math.ceil(seconds), prefix, grant)

    def _fastest(self, system: str, connections: int) -> float:
        """The highest rate `system` reached in this run so far; a short acquire run at
        `connections` measures one when it has none yet."""
        rates = [
            measured.rate
            for (_, measured_system, _), runs in self.results.cells.items()
            if measured_system == system
            for measured in runs
        ]
        if not rates:
            probe = _prefix(system, "probe", connections, 0)
            rates = [self._load(system, "acquire", connections, probe, None).rate]
        return max(rates)

    def measure(self, system: str, workload: str, connections: int, run: int) -> Measurement:
        s = self.systems
        prefix = _prefix(system, workload, connections, run)
        grant = None  # of the held leases a release run consumes, which its releases name
        groups, per_group, rate = 0, 0, 0.0
        if workload.startswith("release"):
            groups = _release_groups(system, connections)
            rate = self._fastest(system, connections) * PREFILL_MARGIN
            spread = 1.5 if groups > 1 else 1.0  # connections do not all go as fast
            per_group = math.ceil(rate * self.results.seconds * spread / groups) + 100
            grant = asyncio.run(prefill(s.database.url, prefix, groups, per_group))
        app = CpuMeter(s.tenure.pid if system == "tenure" else s.naive.pid)
        db = CpuMeter(s.postmaster)
        app.start()
        db.start()
        measured = self._load(system, workload, connections, prefix, grant)
        app_cpu = app.elapsed() if system in ("tenure", "naive") else measured.app_cpu_seconds
        measured = replace(
            measured,
            app_cpu_seconds=app_cpu,
            db_cpu_seconds=db.elapsed() if db.active else None,
        )
        if workload.startswith("release"):  # a release of a name no longer held would count as done
            if asyncio.run(_released_last(s.database.url, prefix, groups, per_group)):
                raise PrefillExhausted(
                    f"release ran out of held leases: {groups} sequence(s) of {per_group:,}, "
                    f"sized for {rate:,.0f} releases/s ({PREFILL_MARGIN:g}x the fastest rate of "
                    f"{system} so far in this run); raise PREFILL_MARGIN in bench/matrix.py"
                )
            missing = measured.ops - asyncio.run(_released(s.database.url, prefix))
            if missing > 0:
                measured = replace(measured, errors=measured.errors + missing)
        return measured

    def run(self, workloads: list[str]) -> None:
        r = self.results
        for workload in workloads:
            if workload in r.missing:
                continue
            systems = WORKLOADS[workload][1]
            self._warm_up(workload, systems)
            for connections in connections_of(workload, r.connections):
                for run in range(r.runs):
                    turn = run % len(systems)
                    for system in systems[turn:] + systems[:turn]:
                        self._one(system, workload, connections, run)

    def _warm_up(self, workload: str, systems: tuple[str, ...]) -> None:
        """A short unmeasured run at the most connections: the services' pools grow and each new
        connection prepares the workload's statements (asyncpg introspects array types on first
        use, which takes long) before anything is measured, as in a service that has run a while."""
        if workload.startswith("release"):
            return  # it would consume the held leases; acquire warmed the pools already
        connections = max(self.results.connections)
        for system in systems:
            if system in ("tenure", "naive"):
                url = self.systems.tenure.url if system == "tenure" else self.systems.naive.url
                try:
                    runners.http(url, workload, connections, WARM_UP_SECONDS, f"warm{system}-", 1)
                except RuntimeError as error:
                    self.log(f"  warm-up of {workload} on {system} failed: {error}")

    def _one(self, system: str, workload: str, connections: int, run: int) -> None:
        key = (workload, system, connections)
        if key in self.results.failures:
            return
        try:
            measured = self.measure(system, workload, connections, run)
        except Exception as error:  # one failed figure must not lose the rest of the run
            self.results.failures[key] = f"{type(error).__name__}: {str(error)[-300:]}"
            self.log(f"  {workload:>14} {system:>8} c={connections:<3} FAILED: {error}")
            return
        self.results.cells.setdefault(key, []).append(measured)
        self.log(
            f"  {workload:>14} {system:>8} c={connections:<3} run {run}: "
            f"{measured.rate:9,.0f}/s  p50 {measured.p50_ms:7.2f} ms  "
            f"p99 {measured.p99_ms:7.2f} ms  errors {measured.errors}"
        )
