"""The measurements that are not throughput: hand-off latency (handoff.py), takeover after
SIGKILL (takeover.py), and the idle cost of many held leases renewed every 30 s."""

from __future__ import annotations

import asyncio
import subprocess
import time
from contextlib import AbstractContextManager, ExitStack

import handoff
import takeover
from cpu import CpuMeter
from database import prefill
from results import Idle
from runners import GRACE_SECONDS, HERE, PYTHON
from tests.support.processes import Server, free_port, running, tenure_command
from workloads import Measurement

RENEW_EVERY_SECONDS = 30.0
IDLE_CONNECTIONS = 8
IDLE_WARM_SECONDS = 3.0


def hand_offs(env: dict[str, str], rounds: int) -> tuple[list[float], list[float]]:
    """Hand-offs within one service process, then across two replicas: two `tenure serve` of one
    worker each, with `env`. (Between the workers of one service the kernel places the two
    connections as it likes, and a run would measure one case or the other.)"""
    with ExitStack() as stack:
        one, two = (stack.enter_context(_replica(env)) for _ in range(2))
        within = asyncio.run(handoff.hand_offs(one.url, rounds))
        across = asyncio.run(handoff.hand_offs(one.url, rounds, two.url))
    return within, across


def _replica(env: dict[str, str]) -> AbstractContextManager[Server]:
    port = free_port()
    return running(tenure_command(port, "--workers", "1"), port, env=env, output=subprocess.DEVNULL)


def database_hand_offs(database_url: str, rounds: int) -> list[float]:
    return asyncio.run(handoff.database_hand_offs(database_url, rounds))


def takeovers(url: str, rounds: int, ttl: float) -> list[float]:
    return asyncio.run(takeover.takeovers(url, rounds, ttl))


def _core_percent(cpu_seconds: float, seconds: float) -> float:
    return cpu_seconds / seconds * 100


def service_floor(tenure: Server, seconds: float) -> float:
    """The service's CPU with no load at all (its monitor loop, pool upkeep), % of one core."""
    service = CpuMeter(tenure.pid)
    service.start()
    time.sleep(seconds)
    return _core_percent(service.elapsed(), seconds)


def idle_cost(
    database_url: str,
    tenure: Server,
    postmaster: int | None,
    leases: int,
    seconds: float,
    batch: int,
) -> Idle:
    """The service's CPU while `leases` held leases are each renewed every 30 s, spread evenly
    (10,000 leases: ~333 renews/s), as a percentage of one core: one request per renewal, or
    one batch renew request per `batch` leases."""
    asyncio.run(prefill(database_url, "idle-", 1, leases))
    command = [
        PYTHON,
        str(HERE / "loadgen.py"),
        f"--url={tenure.url}",
        "--workload=idle",
        f"--leases={leases}",
        f"--batch={batch}",
        f"--renew-every={RENEW_EVERY_SECONDS}",
        f"--connections={IDLE_CONNECTIONS}",
        f"--seconds={seconds + IDLE_WARM_SECONDS}",
    ]
    service, database = CpuMeter(tenure.pid), CpuMeter(postmaster)
    client = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    time.sleep(IDLE_WARM_SECONDS)
    service.start()
    database.start()
    time.sleep(seconds)
    used, db_used = service.elapsed(), database.elapsed()
    output, _ = client.communicate(timeout=GRACE_SECONDS)
    renewals = Measurement.from_json(output.strip().splitlines()[-1])
    return Idle(
        leases=leases,
        batch=batch,
        seconds=seconds,
        renews_per_second=renewals.rate,
        service_core_percent=_core_percent(used, seconds),
        database_core_percent=_core_percent(db_used, seconds) if database.active else None,
        errors=renewals.errors,
    )
