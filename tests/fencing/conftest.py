"""Fixtures for the fencing tests: the real Tenure service (in a thread, or as its own process),
a second database that plays the protected service's own, and the processes a test starts."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest

from tenure_server.server.settings import Settings
from tests import postgres
from tests.client.conftest import LiveService, Processes
from tests.e2e.service_process import free_port

HERE = Path(__file__).parent
WORKER = HERE / "worker.py"
DOWNSTREAM = HERE / "downstream.py"
READY_TIMEOUT = 20.0


@pytest.fixture
def service(database_url: str) -> Iterator[LiveService]:
    """The real service over HTTP on a loopback port (a thread of this process), on this
    test's database."""
    live = LiveService(Settings(database_url=database_url, pool_min_size=1, pool_max_size=10))
    live.start()
    yield live
    live.stop()


@pytest.fixture
async def own_database_url(server_url: str) -> AsyncIterator[str]:
    """An empty database of its own: the protected service's, not Tenure's."""
    name = postgres.unique_name("fence_own")
    url = await postgres.create_database(server_url, name)
    yield url
    await postgres.drop_database(server_url, name)


@pytest.fixture
async def own_pool(own_database_url: str) -> AsyncIterator[asyncpg.Pool[asyncpg.Record]]:
    async with asyncpg.create_pool(own_database_url, min_size=1, max_size=10) as pool:
        yield pool


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.close()


def wait_http(url: str, process: subprocess.Popen[str], timeout: float = READY_TIMEOUT) -> None:
    """Return once GET `url` answers 200; fail if the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} not ready after {timeout} s")


@contextmanager
def downstream(processes: Processes, store: str, target: str = "-") -> Iterator[str]:
    """The payments service (tests/fencing/downstream.py) as its own process; yields its URL."""
    port = free_port()
    process = processes.start(sys.executable, str(DOWNSTREAM), store, str(port), target)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/healthz", process)
    yield url


def worker(processes: Processes, *arguments: str) -> subprocess.Popen[str]:
    return processes.start(sys.executable, str(WORKER), *arguments)
