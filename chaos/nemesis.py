"""The nemesis: a seeded schedule of faults, each injected, then healed, then followed by a
liveness probe (an acquire of a lease of its own, retried until it succeeds).

    F1  a worker holding a lease is paused (SIGSTOP) past the longest TTL, then resumed
    F2  a service replica is paused (SIGSTOP) for 1-2 TTLs, then resumed
    F3  a service replica is killed (SIGKILL) and restarted; healed when it is ready again
    F4  the database is stopped (`fast` or `immediate`) right after an acknowledged acquire, and
        started again; its lease generations are read at once (the durability probe)
    F5  the proxy between the service and the database adds delay, holds every byte (a black
        hole that ends with the connections reset), resets connections, refuses new ones
    F6  some workers hold their next fenced transaction open for 0.5-2 TTLs
    F7  a storm: 64 clients race for one lease with a 100 ms TTL
    F8  a window worker is paused between its claim and its completion, past the TTL
    F9  (a topology, not an event) several replicas, clients pick one at random per request
    F10 database failover (with a streaming standby, `chaos.replication`): the standby's stream
        is black-holed, an acquire is made, the workload goes on for a moment (its commits are
        on the primary alone, or wait for the standby), then the primary is crashed, the standby
        promoted, every address repointed to it, and a new standby cloned from it
    F11 the database's clock jumps (`chaos.clock`, libfaketime): stepped forward or back by
        0.5-3 TTLs and held there, or strobed (flipped between its true time and 0.5-3 TTLs
        ahead every 50-300 ms); healed by stepping it back to the true time

Faults run one at a time, so each heal is followed by its own probe; a fault that could not
heal before the end of the run is not started.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.actor import Actor
from chaos.clock import DatabaseClock
from chaos.cluster import Cluster, Processes
from chaos.database import StopMode, lease_generations
from chaos.history import Recorder
from chaos.proxy import Proxy
from chaos.replication import Databases

FAULTS = ("F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11")
PROBE_LEASE = "chaos.probe"
DURABILITY_LEASE = "chaos.durability"
PROBE_INTERVAL = 0.05
# What a failover may take beyond its stall (crash, promotion, a new standby cloned and
# streaming; chaos/README.md has the times measured): none is started unless it can end in time.
FAILOVER_SECONDS = 5.0
# How long the first acquire after a promotion may wait for its answer (a synchronous primary
# holds commits until the new standby streams) and how long it is retried.
FIRST_ACQUIRE_TIMEOUT = 10.0
FIRST_ACQUIRE_BOUND = 60.0
# F11: the clock's steps in TTLs, and how long a strobe stays on one side.
CLOCK_STEP_TTLS = (0.5, 3.0)
STROBE_PERIOD = (0.05, 0.3)
CLOCK_MODES = ("forward", "backward", "strobe")


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the start of the run
    kind: str
    duration: float
    params: Mapping[str, Any] = field(default_factory=dict)


def _plan_one(kind: str, rng: random.Random, ttl: float) -> Fault:
    """A fault of `kind` with its duration and parameters drawn (at is filled in later)."""
    match kind:
        case "F1" | "F8":
            return Fault(0, kind, round(rng.uniform(1.2, 2.0) * ttl + 0.2, 3))
        case "F2":
            return Fault(0, kind, round(rng.uniform(1.0, 2.0) * ttl, 3))
        case "F3":
            return Fault(0, kind, round(rng.uniform(0.2, 1.0), 3))
        case "F4":
            mode = rng.choice(["fast", "immediate"])
            return Fault(0, kind, round(rng.uniform(0.3, 1.5), 3), {"mode": mode})
        case "F5":
            return Fault(0, kind, round(rng.uniform(3.0, 6.0), 3))
        case "F6":
            return Fault(0, kind, round(2 * ttl + 1, 3))
        case "F10":
            stall = round(rng.uniform(0.3, 1.0), 3)
            return Fault(0, kind, round(stall + FAILOVER_SECONDS, 3), {"stall": stall})
        case "F11":
            mode = rng.choice(CLOCK_MODES)
            step = round(rng.uniform(*CLOCK_STEP_TTLS) * ttl, 3)
            return Fault(
                0, kind, round(rng.uniform(1.5, 3.0) * ttl, 3), {"mode": mode, "step": step}
            )
        case _:  # F7
            return Fault(0, kind, round(rng.uniform(2.0, 4.0), 3))


def schedule(
    faults: list[str], duration: float, seed: int, ttl: float, *, warmup: float = 2.0
) -> list[Fault]:
    """The faults of a run, in order: every enabled fault in turn (reshuffled each round), with
    gaps, none ending later than the tail the run keeps for its final checks."""
    rng = random.Random(seed)  # noqa: S311 - a seeded schedule, reproducible, no secret
    kinds = [kind for kind in faults if kind != "F9"]
    plan: list[Fault] = []
    at, end = warmup, duration - (2 * ttl + 4)
    while kinds:
        rng.shuffle(kinds)
        for kind in kinds:
            fault = _plan_one(kind, rng, ttl)
            if at + fault.duration > end:
                return plan
            plan.append(Fault(round(at, 3), kind, fault.duration, fault.params))
            at += fault.duration + ttl + rng.uniform(1.0, 3.0)
    return plan


@dataclass
class Targets:
    """What the nemesis acts on."""

    run: Path
    processes: Processes
    cluster: Cluster
    databases: Databases
    proxy: Proxy  # the service's way to the database
    workers: list[subprocess.Popen[bytes]]
    window_workers: list[subprocess.Popen[bytes]]
    storm: list[subprocess.Popen[bytes]]
    names: Mapping[int, str]  # pid -> worker name (for its state file)
    clock: DatabaseClock | None = None  # F11


class Nemesis:
    def __init__(
        self,
        targets: Targets,
        recorder: Recorder,
        seed: int,
        ttl: float,
        *,
        crash: StopMode | None = None,
    ) -> None:
        self.targets = targets
        self.crash = crash  # every F4 stops the database this way (else as scheduled)
        self.recorder = recorder
        self.rng = random.Random(seed + 1)  # noqa: S311 - a seeded schedule, no secret
        self.ttl = ttl
        self.probes = Recorder(targets.run / "history" / "probe.jsonl", "probe")
        self.injected: dict[str, int] = {}
        # Held from a fault's start to its heal. Whatever else heals beside the schedule (a
        # rolling upgrade's step, chaos.upgrade) records its heal and probes only outside it, so
        # that property 7 measures recovery with no fault in progress.
        self.quiet = asyncio.Lock()
        self.actions: dict[str, Callable[[Fault], Awaitable[dict[str, Any]]]] = {
            "F1": self.pause_worker,
            "F2": self.pause_service,
            "F3": self.kill_service,
            "F4": self.restart_database,
            "F5": self.disturb_network,
            "F6": self.long_transactions,
            "F7": self.storm,
            "F8": self.pause_window_worker,
            "F10": self.fail_over,
            "F11": self.jump_clock,
        }

    async def run(self, plan: list[Fault], started: float, end: float, bound: float) -> None:
        for fault in plan:
            await asyncio.sleep(max(0.0, started + fault.at - time.monotonic()))
            if time.monotonic() + fault.duration + self.ttl > end:
                return  # it could not heal before the end
            async with self.quiet:
                self.event(fault.kind, "start", {"duration": fault.duration, **fault.params})
                detail = await self.actions[fault.kind](fault)
                self.event(fault.kind, "heal", detail)
            self.injected[fault.kind] = self.injected.get(fault.kind, 0) + 1
            await self.probe(bound)

    def close(self) -> None:
        self.probes.close()

    def event(self, fault: str, phase: str, detail: Mapping[str, Any]) -> None:
        record = {"type": "fault", "fault": fault, "phase": phase, "t": time.monotonic()}
        self.recorder.write(record | {"detail": dict(detail)})

    def actor(self, name: str, recorder: Recorder | None = None, timeout: float = 1.0) -> Actor:
        return Actor(
            name,
            recorder or self.recorder,
            self.targets.cluster.urls,
            rng=self.rng,
            pool=None,
            http=None,
            downstream=None,
            timeout=timeout,
        )

    async def probe(self, bound: float) -> None:
        """Acquire (then release) the probe lease until it works, at most `bound` seconds."""
        actor = self.actor("probe", self.probes)
        deadline = time.monotonic() + bound
        try:
            while time.monotonic() < deadline:
                holding = await actor.acquire(PROBE_LEASE, 1.0)
                if holding is not None:
                    await actor.release(holding)
                    return
                await asyncio.sleep(PROBE_INTERVAL)
        finally:
            await actor.close()

    # Faults ------------------------------------------------------------------------------------

    def _holding(self, processes: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """A worker that holds a lease now (its state file says so), else any of them."""
        state = self.targets.run / "state"
        holding = [
            process
            for process in processes
            if (state / self.targets.names[process.pid]).exists()
            and (state / self.targets.names[process.pid]).read_text(encoding="utf-8").strip()
        ]
        return self.rng.choice(holding or processes)

    async def _pause(self, process: subprocess.Popen[bytes], seconds: float) -> None:
        self.targets.processes.send(process, signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.targets.processes.send(process, signal.SIGCONT)

    async def pause_worker(self, fault: Fault) -> dict[str, Any]:
        process = self._holding(self.targets.workers)
        await self._pause(process, fault.duration)
        return {"worker": self.targets.names[process.pid]}

    async def pause_window_worker(self, fault: Fault) -> dict[str, Any]:
        if not self.targets.window_workers:
            return {"skipped": "no window workers"}
        process = self._holding(self.targets.window_workers)
        await self._pause(process, fault.duration)
        return {"worker": self.targets.names[process.pid]}

    async def pause_service(self, fault: Fault) -> dict[str, Any]:
        index = self.rng.randrange(len(self.targets.cluster.replicas))
        self.targets.cluster.signal(index, signal.SIGSTOP)
        try:
            await asyncio.sleep(fault.duration)
        finally:
            self.targets.cluster.signal(index, signal.SIGCONT)
        return {"replica": index}

    async def kill_service(self, fault: Fault) -> dict[str, Any]:
        index = self.rng.randrange(len(self.targets.cluster.replicas))
        async with self.targets.cluster.replicas[index].changing:  # not while it is replaced
            await self.targets.cluster.kill(index)
            await asyncio.sleep(fault.duration)
            await self.targets.cluster.start(index)
        return {"replica": index}

    async def _acknowledged_acquire(self, answer_within: float = 1.0) -> float | None:
        """One acquire of the durability lease by a new holder: an acknowledgement a crash must
        not lose. Returns when it was acknowledged (None: it was not)."""
        actor = self.actor(f"nemesis-{self.rng.getrandbits(16):04x}", timeout=answer_within)
        try:
            holding = await actor.acquire(DURABILITY_LEASE, 0.2)
            return None if holding is None else time.monotonic()
        finally:
            await actor.close()

    async def _probe_generations(self, mode: str) -> None:
        """Read every lease's generation straight from the (new) primary: the durability probe,
        held against every grant acknowledged before it."""
        probed = time.monotonic()
        generations = await lease_generations(self.targets.databases.primary.url("tenure"))
        self.recorder.write(
            {"type": "db_probe", "t": probed, "mode": mode, "generations": generations}
        )

    async def restart_database(self, fault: Fault) -> dict[str, Any]:
        mode: StopMode = self.crash or fault.params.get("mode", "fast")
        acknowledged = await self._acknowledged_acquire()
        database = self.targets.databases.primary
        await asyncio.to_thread(database.stop, mode)
        await asyncio.sleep(fault.duration)
        await asyncio.to_thread(database.start)
        await self._probe_generations(mode)
        return {"mode": mode, "acknowledged": None if acknowledged is None else 1}

    async def fail_over(self, fault: Fault) -> dict[str, Any]:
        """F10, as an HA manager with a floating address does it, after the standby fell behind:
        the standby's stream is held; an acquire, and the workload, go on for `stall` seconds;
        the primary crashes; the standby is promoted and every address repointed to it. Then,
        while a new standby is cloned from the new primary, the generations are probed and a new
        holder acquires the durability lease (with an asynchronous standby: the generation
        acknowledged during the stall, again)."""
        databases, stall = self.targets.databases, float(fault.params["stall"])
        databases.link.blackhole(True)
        acknowledged, _ = await asyncio.gather(self._acknowledged_acquire(), asyncio.sleep(stall))
        killed, promoted = await databases.fail_over()
        standby = asyncio.create_task(databases.add_standby())  # what synchronous commits await
        try:
            await self._probe_generations("failover")
            first = await self._first_acquire(promoted)
        finally:
            await standby
        return {
            "stall": stall,
            "acknowledged": None if acknowledged is None else 1,
            "promoted": round(promoted - killed, 3),
            "first_acquire": None if first is None else round(first, 3),
            "standby": round(time.monotonic() - promoted, 3),
        }

    async def _first_acquire(self, promoted: float) -> float | None:
        """Seconds from the promotion to the first acquire answered ok (retried), or None."""
        while time.monotonic() - promoted < FIRST_ACQUIRE_BOUND:
            acknowledged = await self._acknowledged_acquire(FIRST_ACQUIRE_TIMEOUT)
            if acknowledged is not None:
                return acknowledged - promoted
            await asyncio.sleep(PROBE_INTERVAL)
        return None

    async def disturb_network(self, fault: Fault) -> dict[str, Any]:
        proxy, steps = self.targets.proxy, []
        end = time.monotonic() + fault.duration
        try:
            while time.monotonic() < end:
                step = self.rng.choice(["delay", "blackhole", "reset", "refuse"])
                seconds = min(self.rng.uniform(0.4, 1.5), max(0.0, end - time.monotonic()))
                if step == "delay":
                    proxy.set_delay(self.rng.uniform(0, 0.2), self.rng.uniform(0, 0.3), 0.1)
                elif step == "blackhole":
                    proxy.blackhole(True)
                elif step == "reset":
                    proxy.reset()
                else:
                    proxy.refuse(True)
                steps.append(step)
                await asyncio.sleep(seconds)
                proxy.heal()
        finally:
            proxy.heal()
        return {"steps": steps}

    async def long_transactions(self, fault: Fault) -> dict[str, Any]:
        chosen = self.rng.sample(self.targets.workers, max(1, len(self.targets.workers) // 4))
        for process in chosen:
            self.targets.processes.send(process, signal.SIGUSR1)
        await asyncio.sleep(fault.duration)
        return {"workers": [self.targets.names[process.pid] for process in chosen]}

    async def storm(self, fault: Fault) -> dict[str, Any]:
        for process in self.targets.storm:
            self.targets.processes.send(process, signal.SIGUSR1)
        try:
            await asyncio.sleep(fault.duration)
        finally:
            for process in self.targets.storm:
                self.targets.processes.send(process, signal.SIGUSR2)
        return {"processes": len(self.targets.storm)}

    def _step_clock(self, clock: DatabaseClock, offset: float) -> None:
        """Step the database's clock to `offset`, recorded (the checker's `ClockSteps`)."""
        previous = clock.offset
        at = clock.step(offset)
        detail = {"offset": offset, "previous": previous}
        self.recorder.write(
            {"type": "fault", "fault": "F11", "phase": "step", "t": at, "detail": detail}
        )

    async def jump_clock(self, fault: Fault) -> dict[str, Any]:
        clock = self.targets.clock
        if clock is None:
            return {"skipped": "no database clock"}
        mode, step = fault.params["mode"], float(fault.params["step"])
        steps = 0
        try:
            if mode == "strobe":
                end = time.monotonic() + fault.duration
                while time.monotonic() < end:
                    self._step_clock(clock, step if clock.offset == 0 else 0.0)
                    steps += 1
                    await asyncio.sleep(self.rng.uniform(*STROBE_PERIOD))
            else:
                self._step_clock(clock, step if mode == "forward" else -step)
                steps += 1
                await asyncio.sleep(fault.duration)
        finally:
            if clock.offset != 0:
                self._step_clock(clock, 0.0)
                steps += 1
        return {"mode": mode, "step": step, "steps": steps}
