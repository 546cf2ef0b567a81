"""Everything one run starts — the database (and its standby, with F10), the proxies, the service
replicas, the downstream app and the workers — in order, and its teardown, which kills whatever
is left (process groups, the databases) however the run ended.

Nothing reaches the database but through a floating address (`Databases.address`), which a
failover repoints: the service through the proxy F5 disturbs, the workers and the downstream app
(the payments example, `tests.support.payments`) through a quiet one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tests.support.payments import READY_PATH, payments_command, python_env
from tests.support.postgres import execute
from tests.support.processes import free_port, wait_ready

from chaos import facts
from chaos.actor import Actor
from chaos.clock import DatabaseClock
from chaos.cluster import READY_TIMEOUT, Cluster, Processes, service_env
from chaos.database import url_of
from chaos.history import Recorder
from chaos.nemesis import Targets
from chaos.proxy import Proxy
from chaos.replication import Databases
from chaos.upgrade import previous_tenure
from chaos.worker import WorkerConfig

WINDOW_LEASE = "chaos.window"
STORM_LEASE = "chaos.storm"
# The slow path of the arrival-deadline control: answers of the service held this long.
SLOW_ANSWER = 0.4


@dataclass(frozen=True)
class Options:
    duration: float = 120.0
    workers: int = 16
    faults: tuple[str, ...] = ("F1", "F3", "F4", "F6", "F7")
    seed: int = 1
    variant: str = "correct"
    ttl_min: float = 0.5
    ttl_max: float = 2.0
    leases: int = 0  # 0: a quarter of the workers, at least 2
    replicas: int = 0  # 0: 3 with F9, else 1
    liveness_bound: float = 5.0  # seconds beyond the longest TTL
    storm_processes: int = 4
    storm_contenders: int = 16
    upgrade: bool = False  # start on the previous release, upgrade and roll back (chaos.upgrade)

    @property
    def lease_names(self) -> list[str]:
        return [f"chaos.lease.{n}" for n in range(self.leases or max(2, self.workers // 4))]

    @property
    def replica_count(self) -> int:
        return self.replicas or (3 if "F9" in self.faults else 1)

    @property
    def window_workers(self) -> int:
        return max(2, self.workers // 4) if "F8" in self.faults else 0

    @property
    def storm_count(self) -> int:
        return self.storm_processes if "F7" in self.faults else 0

    @property
    def standby(self) -> bool:
        return "F10" in self.faults


class Lab:
    def __init__(self, options: Options, run: Path) -> None:
        self.options = options
        self.run = run
        for folder in ("history", "ready", "state", "workers"):
            (run / folder).mkdir(parents=True, exist_ok=True)
        self.processes = Processes(run / "logs")
        # F11: every server reads one clock the nemesis steps.
        self.clock = DatabaseClock(run / "database-clock") if "F11" in options.faults else None
        self.databases = Databases(
            run,
            standby=options.standby,
            synchronous=options.variant != "async-replication",
            environment=None if self.clock is None else self.clock.environment,
        )
        self.proxy = self.databases.address(seed=options.seed)  # the service's, F5 disturbs it
        self.address = self.databases.address()  # the workers' and the downstream app's
        self.slow: list[Proxy] = []
        self.cluster: Cluster | None = None
        self.downstream_url: str | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.window_workers: list[subprocess.Popen[bytes]] = []
        self.storm: list[subprocess.Popen[bytes]] = []
        self.names: dict[int, str] = {}
        self.recorder = Recorder(run / "history" / "nemesis.jsonl", "nemesis")

    # Start -------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self._database()
        extra = {"TENURE_ALLOW_ASYNC_COMMIT": "true"} if self._async_commit else {}
        env = service_env(url_of(self.proxy.port, "tenure"), self.run / "service", extra)
        self.cluster = Cluster(self.processes, self.options.replica_count, env)
        if self.options.upgrade:
            previous = await asyncio.to_thread(previous_tenure)
            for replica in self.cluster.replicas:
                replica.tenure = previous
        await self.cluster.start(0)  # migrates (to the previous release's schema, in an upgrade)
        await asyncio.gather(*(self.cluster.start(n) for n in range(1, len(self.cluster.replicas))))
        await execute(self.databases.primary.url("tenure"), facts.SQL_WRITES_TABLE)
        await self._downstream()
        if self.options.variant == "arrival-deadline":
            for replica in self.cluster.replicas:
                slow = Proxy(replica.port, seed=self.options.seed)
                slow.start()
                slow.set_delay(downstream=SLOW_ANSWER, jitter=0.1)
                self.slow.append(slow)
        self._workers()
        await self._wait_for_workers()

    @property
    def _async_commit(self) -> bool:
        return self.options.variant == "async-commit"

    async def _database(self) -> None:
        await self.databases.start()
        admin = self.databases.primary.url()
        await execute(admin, "CREATE DATABASE tenure", "CREATE DATABASE downstream")
        if self._async_commit:  # the negative control: acknowledged commits may be lost
            await execute(
                admin,
                "ALTER SYSTEM SET synchronous_commit = off",
                "ALTER SYSTEM SET wal_writer_delay = '10s'",
                "SELECT pg_reload_conf()",
            )

    async def _downstream(self) -> None:
        """The payments example, a fence per lease, its payouts and fences in its own database."""
        port, database = free_port(), url_of(self.address.port, "downstream")
        command = payments_command(port, database, fence_per_lease=True)
        process = self.processes.start("downstream", command, python_env())
        self.downstream_url = f"http://127.0.0.1:{port}"
        ready = f"{self.downstream_url}{READY_PATH}"
        await asyncio.to_thread(wait_ready, ready, process, READY_TIMEOUT)

    def _config(self, name: str, mode: str, number: int) -> WorkerConfig:
        options, cluster = self.options, self.cluster
        if cluster is None:
            raise RuntimeError("the service is not started")
        services = cluster.urls
        if self.slow and number % 2 == 0:  # half the workers get their answers late
            services = [f"http://127.0.0.1:{proxy.port}" for proxy in self.slow]
        fence_control = options.variant in ("key-share", "check-then-write")
        return WorkerConfig(
            name=name,
            mode=mode,
            run=str(self.run),
            services=services,
            database=url_of(self.address.port, "tenure"),
            downstream=self.downstream_url,
            leases=options.lease_names,
            ttl_min=options.ttl_min,
            ttl_max=options.ttl_max,
            seed=options.seed * 1000 + number,
            variant=options.variant,
            long_write_probability=0.35 if fence_control else 0.0,
            forget_probability=0.6 if options.variant == "arrival-deadline" else 0.2,
        )

    def _spawn(self, config: WorkerConfig) -> subprocess.Popen[bytes]:
        path = self.run / "workers" / f"{config.name}.json"
        path.write_text(json.dumps(asdict(config)), encoding="utf-8")
        process = self.processes.start(
            config.name, [sys.executable, "-m", "chaos.worker", str(path)], python_env()
        )
        self.names[process.pid] = config.name
        return process

    def _workers(self) -> None:
        options = self.options
        for number in range(options.workers):
            self.workers.append(self._spawn(self._config(f"w{number:02d}", "lease", number)))
        for number in range(options.window_workers):
            config = self._config(f"win{number}", "window", 100 + number)
            self.window_workers.append(self._spawn(replace(config, leases=[WINDOW_LEASE])))
        for number in range(options.storm_count):
            config = self._config(f"storm{number}", "storm", 200 + number)
            config = replace(
                config, leases=[STORM_LEASE], contenders=options.storm_contenders, downstream=None
            )
            self.storm.append(self._spawn(config))

    async def _wait_for_workers(self) -> None:
        expected = len(self.workers) + len(self.window_workers) + len(self.storm)
        async with asyncio.timeout(READY_TIMEOUT):
            while len(list((self.run / "ready").iterdir())) < expected:
                for process in (*self.workers, *self.window_workers, *self.storm):
                    if process.poll() is not None:
                        raise RuntimeError(f"worker {self.names[process.pid]} exited early")
                await asyncio.sleep(0.1)

    def go(self) -> float:
        """Start the workers (all at once); returns the start instant."""
        started = time.monotonic()
        (self.run / "start.tmp").write_text(repr(started), encoding="utf-8")
        (self.run / "start.tmp").rename(self.run / "start")
        return started

    def targets(self) -> Targets:
        if self.cluster is None:
            raise RuntimeError("the service is not started")
        return Targets(
            self.run,
            self.processes,
            self.cluster,
            self.databases,
            self.proxy,
            self.workers,
            self.window_workers,
            self.storm,
            self.names,
            self.clock,
        )

    # Finish ------------------------------------------------------------------------------------

    @property
    def all_leases(self) -> list[str]:
        leases = list(self.options.lease_names)
        if self.window_workers:
            leases.append(WINDOW_LEASE)
        if self.storm:
            leases.append(STORM_LEASE)
        return leases

    async def finish(self) -> None:
        """Stop the workers, check that no lease is stuck, and record the database's facts."""
        every = [*self.workers, *self.window_workers, *self.storm]
        await asyncio.to_thread(self.processes.stop, every)
        await self._final_acquires()
        primary = self.databases.primary
        found = await facts.collect(primary.url("tenure"), primary.url("downstream"))
        (self.run / "facts.json").write_text(json.dumps(found.to_json()), encoding="utf-8")

    async def _final_acquires(self) -> None:
        if self.cluster is None:
            return
        recorder = Recorder(self.run / "history" / "final.jsonl", "final")
        actor = Actor(
            "final",
            recorder,
            self.cluster.urls,
            rng=self.proxy_rng(),
            pool=None,
            http=None,
            downstream=None,
            timeout=1.0,
        )
        wait = self.options.ttl_max + self.options.liveness_bound
        try:
            for lease in self.all_leases:
                holding = await actor.acquire(lease, 1.0, wait)
                if holding is not None:
                    await actor.release(holding)
        finally:
            await actor.close()
            recorder.close()

    def proxy_rng(self) -> random.Random:
        return random.Random(self.options.seed)  # noqa: S311 - seeded, no secret

    async def close(self) -> None:
        """Kill whatever is left and delete the database; never raises."""
        with contextlib.suppress(Exception):
            self.proxy.heal()
        await asyncio.to_thread(self.processes.kill_all)
        for proxy in self.slow:
            with contextlib.suppress(Exception):
                proxy.stop()
        await asyncio.to_thread(self.databases.destroy)
        with contextlib.suppress(Exception):
            self.recorder.close()
