"""A worker process of the workload: `python -m chaos.worker CONFIG.json`.

Modes:
- `lease`: loop — acquire a random lease of the workload (sometimes a waiting acquire) → for a
  while, units of work: check the belief, pause a moment, then a fenced SQL write, a fenced HTTP
  write or a side effect → release. Some holdings are never renewed (they expire: takeovers).
  The pause between the check and the write is where a SIGSTOP makes a stale writer.
- `window`: loop — acquire the window lease → claim the current window (keys change every few
  seconds, so many workers race for each) → sometimes stall past the TTL without renewing →
  complete → release.
- `storm`: `contenders` clients in this process, idle until SIGUSR1, then all racing for one
  lease with a 100 ms TTL until SIGUSR2 (F7).

Signals: SIGTERM stops (after releasing); SIGUSR1 in `lease` mode makes the next fenced SQL
write a long one (F6). The worker writes `<run>/ready/<name>` when set up, starts when
`<run>/start` exists (its text: the common start instant), and keeps `<run>/state/<name>` as
"<lease> <generation>" while it holds a lease (the nemesis pauses holders).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx

from chaos.actor import Actor, Holding
from chaos.history import Recorder

STORM_TTL = 0.1


@dataclass(frozen=True)
class WorkerConfig:
    name: str
    mode: str  # lease | window | storm
    run: str  # the run's folder
    services: list[str]
    database: str
    downstream: str | None = None
    leases: list[str] = field(default_factory=list)
    ttl_min: float = 0.5
    ttl_max: float = 2.0
    seed: int = 0
    variant: str = "correct"
    long_write_probability: float = 0.0
    forget_probability: float = 0.2
    reckless_probability: float = 0.15
    contenders: int = 1
    timeout: float = 1.0
    job: str = "chaos-job"
    window_seconds: float = 3.0

    @classmethod
    def read(cls, path: Path) -> WorkerConfig:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


class Worker:
    """The process: its actors, signals and shared state."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.run = Path(config.run)
        self.rng = random.Random(config.seed)  # noqa: S311 - a seeded workload, not a secret
        self.recorder = Recorder(self.run / "history" / f"{config.name}.jsonl", config.name)
        self.stop = asyncio.Event()
        self.storm = asyncio.Event()
        self.long_writes = 0
        self.start_at = 0.0

    def ttl(self) -> float:
        return round(self.rng.uniform(self.config.ttl_min, self.config.ttl_max), 3)

    async def pause(self, low: float, high: float) -> None:
        """Sleep, waking early when asked to stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), self.rng.uniform(low, high))

    def state(self, holding: Holding | None) -> None:
        text = "" if holding is None else f"{holding.lease} {holding.generation}\n"
        (self.run / "state" / self.config.name).write_text(text, encoding="utf-8")

    def signals(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stop.set)
        loop.add_signal_handler(signal.SIGINT, self.stop.set)
        loop.add_signal_handler(signal.SIGUSR1, self._usr1)
        loop.add_signal_handler(signal.SIGUSR2, self.storm.clear)

    def _usr1(self) -> None:
        self.long_writes += 1
        self.storm.set()

    async def wait_for_start(self) -> None:
        (self.run / "ready" / self.config.name).touch()
        start = self.run / "start"
        while not start.exists() and not self.stop.is_set():
            await self.pause(0.02, 0.02)
        if start.exists():
            self.start_at = float(start.read_text(encoding="utf-8") or time.monotonic())


# Modes ---------------------------------------------------------------------------------------


async def lease_loop(worker: Worker, actor: Actor) -> None:
    config = worker.config
    while not worker.stop.is_set():
        ttl = worker.ttl()
        wait = worker.rng.choice([0.0, 0.0, 0.0, round(worker.rng.uniform(0, ttl), 3)])
        holding = await actor.acquire(worker.rng.choice(config.leases), ttl, wait)
        if holding is None:
            await worker.pause(0.01, 0.08)
            continue
        worker.state(holding)
        await hold(worker, actor, holding)
        worker.state(None)


async def hold(worker: Worker, actor: Actor, holding: Holding) -> None:
    """Work under a holding for a while. A forgetful holding is never renewed (it expires and is
    taken over); a reckless one is forgetful too and keeps writing through the fences for up to
    two TTLs, long after its belief ended — a stalled process that never checks (they must
    refuse it). Side effects are written only under the belief, whatever the holding."""
    config, rng = worker.config, worker.rng
    reckless = rng.random() < config.reckless_probability
    forgetful = reckless or rng.random() < config.forget_probability
    if not forgetful:
        actor.start_renewing(holding)
    stretch = rng.uniform(1.0, 2.0) if reckless else rng.uniform(0.2, 1.5)
    until = time.monotonic() + stretch * holding.ttl
    while time.monotonic() < until and not worker.stop.is_set() and (reckless or holding.held()):
        unit = rng.random()
        await worker.pause(0.02, 0.12)  # between the check above and the write below
        await unit_of_work(worker, actor, holding, unit)
    if forgetful and rng.random() < 0.5:
        actor.abandon(holding)  # no release: the lease expires and is taken over
    else:
        await actor.release(holding)


async def unit_of_work(worker: Worker, actor: Actor, holding: Holding, draw: float) -> None:
    if draw < 0.4:
        hold = 0.0
        if worker.long_writes or worker.rng.random() < worker.config.long_write_probability:
            worker.long_writes = max(0, worker.long_writes - 1)
            hold = round(worker.rng.uniform(0.5, 2.0) * holding.ttl, 3)
        await actor.write_sql(holding, hold)
    elif draw < 0.75 and actor.downstream is not None:
        await actor.write_http(holding)
    else:
        actor.effect(holding)


async def window_loop(worker: Worker, actor: Actor) -> None:
    config = worker.config
    while not worker.stop.is_set():
        ttl = worker.ttl()
        holding = await actor.acquire(config.leases[0], ttl)
        if holding is None:
            await worker.pause(0.01, 0.08)
            continue
        worker.state(holding)
        actor.start_renewing(holding)
        key = f"k{int((time.monotonic() - worker.start_at) // config.window_seconds)}"
        if await actor.window(holding, config.job, key, complete=False):
            if worker.rng.random() < 0.25:  # stall past the TTL: another worker takes over
                holding.renewals.clear()
                await worker.pause(1.0 * ttl, 2.0 * ttl)
                holding.renewals.set()
            else:
                await worker.pause(0.02, 0.2)
            await actor.window(holding, config.job, key, complete=True)
        await actor.release(holding)
        worker.state(None)


async def storm_loop(worker: Worker, actor: Actor) -> None:
    lease = worker.config.leases[0]
    while not worker.stop.is_set():
        if not worker.storm.is_set():
            await worker.pause(0.05, 0.1)
            continue
        holding = await actor.acquire(lease, STORM_TTL)
        if holding is not None:  # often already expired by the time the answer arrives
            actor.effect(holding)
            await actor.write_sql(holding)
            actor.effect(holding)
            await actor.release(holding)
        await worker.pause(0.05, 0.15)


MODES: dict[str, Callable[[Worker, Actor], Awaitable[None]]] = {
    "lease": lease_loop,
    "window": window_loop,
    "storm": storm_loop,
}


async def main(config: WorkerConfig) -> None:
    worker = Worker(config)
    worker.signals()
    actors: list[Actor] = []
    pool = await asyncpg.create_pool(config.database, min_size=1, max_size=4)
    http = httpx.AsyncClient(timeout=config.timeout)
    try:
        for number in range(config.contenders):
            name = config.name if config.contenders == 1 else f"{config.name}.{number}"
            actors.append(
                Actor(
                    name,
                    worker.recorder,
                    config.services,
                    rng=worker.rng,
                    pool=pool,
                    http=http,
                    downstream=config.downstream,
                    variant=config.variant,
                    timeout=config.timeout,
                )
            )
        await worker.wait_for_start()
        loop = MODES[config.mode]
        await asyncio.gather(*(loop(worker, actor) for actor in actors))
    finally:
        for actor in actors:
            await actor.close()
        await http.aclose()
        await pool.close()
        worker.recorder.close()


if __name__ == "__main__":
    asyncio.run(main(WorkerConfig.read(Path(sys.argv[1]))))
