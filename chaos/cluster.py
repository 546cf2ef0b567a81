"""The processes of a run: every one started in its own session (so a signal reaches its whole
process group), logged to `<run>/logs/<name>.log`, and killed when the run ends whatever happens;
and the service replicas (`tenure serve`, started and awaited as `tests.support.processes` starts
any), which the nemesis pauses, kills and restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.processes import (
    TENURE,
    free_port,
    tenure_command,
    wait_ready,
    without_tenure_settings,
)

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0


class Processes:
    """Every process the harness started; `kill_all` ends each one's process group."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.started: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self, name: str, argv: list[str], env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with (self.logs / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(  # noqa: S603 - our own commands, arguments built here
                argv,
                env=dict(env) if env is not None else None,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.started[name] = process
        return process

    @staticmethod
    def send(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        self.send(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT)

    def stop(self, processes: list[subprocess.Popen[bytes]], timeout: float = STOP_TIMEOUT) -> None:
        """Resume (if paused), ask to stop (SIGTERM), and kill what has not stopped in time."""
        for process in processes:
            self.send(process, signal.SIGCONT)
            self.send(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
            self.kill(process)

    def kill_all(self) -> None:
        for process in self.started.values():
            self.send(process, signal.SIGCONT)
            self.kill(process)


@dataclass
class Replica:
    index: int
    port: int
    process: subprocess.Popen[bytes] | None = None
    tenure: Path = TENURE  # the release it runs: another one's command during an upgrade
    # Held while the replica is killed and restarted, or replaced: one change at a time.
    changing: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Cluster:
    """Replicas of `tenure serve` on one database URL (the proxy's), with the harness's env."""

    def __init__(self, processes: Processes, count: int, env: Mapping[str, str]) -> None:
        self.processes = processes
        self.env = dict(env)
        self.replicas = [Replica(index, free_port()) for index in range(count)]
        self.restarts = 0

    @property
    def urls(self) -> list[str]:
        return [replica.url for replica in self.replicas]

    async def start(self, index: int) -> None:
        """Start the replica and wait until it is ready. One that exits during start-up (the
        previous release gives up when the database resets its first connection, F5) is started
        again, as an orchestrator restarts a crashed container, until READY_TIMEOUT."""
        replica = self.replicas[index]
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            name = f"service{index}" + (f".{self.restarts}" if self.restarts else "")
            command = tenure_command(replica.port, tenure=replica.tenure)
            replica.process = self.processes.start(name, command, self.env)
            left = max(1.0, deadline - time.monotonic())
            try:
                await asyncio.to_thread(wait_ready, f"{replica.url}/readyz", replica.process, left)
                return
            except RuntimeError:  # it exited before it was ready
                if time.monotonic() >= deadline:
                    raise
            self.restarts += 1
            await asyncio.sleep(1.0)

    async def kill(self, index: int) -> None:
        process = self.replicas[index].process
        if process is not None:
            await asyncio.to_thread(self.processes.kill, process)
        self.restarts += 1

    async def replace(self, index: int, tenure: Path) -> None:
        """Stop the replica as a rolling update does (SIGTERM, then the kill), and start the
        release whose command is `tenure` on its port."""
        replica = self.replicas[index]
        async with replica.changing:
            if replica.process is not None:
                await asyncio.to_thread(self.processes.stop, [replica.process])
            self.restarts += 1
            replica.tenure = tenure
            await self.start(index)

    def signal(self, index: int, sig: signal.Signals) -> None:
        process = self.replicas[index].process
        if process is not None:
            self.processes.send(process, sig)

    def stop(self) -> None:
        self.processes.stop([r.process for r in self.replicas if r.process is not None])


def service_env(database_url: str, data_dir: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The replicas' environment: nothing of the caller's TENURE_* settings, short TTLs allowed."""
    return without_tenure_settings() | {
        "TENURE_DATABASE_URL": database_url,
        "TENURE_DATA_DIR": str(data_dir),
        "TENURE_MIN_TTL_SECONDS": "0.1",
        "TENURE_LOG_LEVEL": "warning",
        "TENURE_LOG_FORMAT": "text",
        "TENURE_POOL_MIN_SIZE": "2",
        "TENURE_POOL_MAX_SIZE": "10",
        **extra,
    }
