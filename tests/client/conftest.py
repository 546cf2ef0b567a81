"""Fixtures for the client tests: the real service over real HTTP on a loopback port, on the
per-test database, and a TCP proxy in front of it that can stop forwarding (a network fault,
injected on the real path: nothing about the service or the database is faked)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tenure import Tenure, resolve_window
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing
from tenure_server.server.transport import RoundHttpToolsProtocol
from tests.support.processes import TENURE

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")
STARTUP_TIMEOUT = 15.0
# How far behind the database's clock a host's clock runs in the clock-skew tests.
SKEW = timedelta(minutes=5)


def recent_daily_schedule() -> tuple[str, str, str]:
    """A daily UTC schedule that fired 2.5–3.5 minutes ago, its window key ("date") today by the
    real clock (the database's), and yesterday's, by a clock running SKEW behind."""
    now = datetime.now(UTC)
    fired = now - timedelta(minutes=2.5)
    cron = f"{fired.minute} {fired.hour} * * *"
    today = resolve_window(cron, "UTC", "date", now=now)
    yesterday = resolve_window(cron, "UTC", "date", now=now - SKEW)
    assert today != yesterday
    return cron, today, yesterday


class LiveService:
    """`create_app(settings, tracing)` served by uvicorn in a thread with its own event loop,
    over the HTTP protocol `tenure serve` uses."""

    def __init__(self, settings: Settings, tracing: Tracing | None = None) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings, tracing),
            loop="asyncio",
            http=RoundHttpToolsProtocol,
            ws="none",
            log_level="warning",
            lifespan="on",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(STARTUP_TIMEOUT)
        self._socket.close()


class Proxy:
    """A TCP proxy to the service. `blackhole()` makes it swallow every byte in both directions
    (requests get no answer, as behind a dead link); `restore()` forwards again."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self.port = 0
        self.received = bytearray()
        self.connections = 0  # accepted from clients so far
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(STARTUP_TIMEOUT):
            raise RuntimeError("the proxy did not start")

    def blackhole(self) -> None:
        self._forwarding.clear()

    def restore(self) -> None:
        self._forwarding.set()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STARTUP_TIMEOUT)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self._target_port
            )
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pump(reader, upstream_writer, record=True),
            self._pump(upstream_reader, writer, record=False),
            return_exceptions=True,
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, record: bool
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if not self._forwarding.is_set():
                    continue
                if record:
                    self.received.extend(chunk)
                writer.write(chunk)
                await writer.drain()
        finally:
            writer.close()


# `start_service(**settings)`: the service started with those settings.
StartService = Callable[..., LiveService]


@pytest.fixture
def start_service(database_url: str) -> Iterator[StartService]:
    """Starts the real service on a free loopback port, on this test's database, with the
    settings given (`start_service(max_batch_size=1)`); each is stopped after the test."""
    started: list[LiveService] = []

    def start(**settings: Any) -> LiveService:
        live = LiveService(
            Settings(database_url=database_url, pool_min_size=1, pool_max_size=10, **settings)
        )
        live.start()
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


@pytest.fixture
def service(start_service: StartService) -> LiveService:
    """The real service with its default settings."""
    return start_service()


@pytest.fixture
def service_url(service: LiveService) -> str:
    return service.url


@pytest.fixture
def proxy(service: LiveService) -> Iterator[Proxy]:
    front = Proxy(service.port)
    front.start()
    yield front
    front.stop()


@pytest.fixture
def client(service_url: str) -> Iterator[Tenure]:
    with Tenure(service_url) as tenure:
        yield tenure


def _interruptible() -> None:
    """SIGINT as a terminal gives it: a test launched in the background (`&` without job control)
    inherits SIGINT ignored, and Python then never raises KeyboardInterrupt in the process."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Processes:
    """Processes a test starts; any still running at the end are killed (by their own pid)."""

    def __init__(self) -> None:
        self._started: list[subprocess.Popen[str]] = []

    def start(self, *arguments: str) -> subprocess.Popen[str]:
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        process: subprocess.Popen[str] = subprocess.Popen(
            list(arguments),
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_interruptible,
        )
        self._started.append(process)
        return process

    def worker(self, *arguments: str) -> subprocess.Popen[str]:
        return self.start(sys.executable, str(WORKER), *arguments)

    def tenure(self, *arguments: str) -> subprocess.Popen[str]:
        return self.start(str(TENURE), *arguments)

    def close(self) -> None:
        for process in self._started:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGCONT)
                    process.kill()
            process.communicate(timeout=10)
