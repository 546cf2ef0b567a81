"""Fixtures for the fencing tests: the real Tenure service (in a thread, or as its own process),
a second database that plays the protected service's own, and the processes a test starts (the
job workers; the protected service is the payments example, `tests.support.payments`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from tenure_server.server.settings import Settings
from tests import postgres
from tests.client.conftest import LiveService, Processes
from tests.support.processes import tenure_service

HERE = Path(__file__).parent
WORKER = HERE / "worker.py"


@pytest.fixture
def service(database_url: str) -> Iterator[LiveService]:
    """The real service over HTTP on a loopback port (a thread of this process), on this
    test's database."""
    live = LiveService(Settings(database_url=database_url, pool_min_size=1, pool_max_size=10))
    live.start()
    yield live
    live.stop()


@pytest.fixture
def tenure_url(database_url: str) -> Iterator[str]:
    """`tenure serve` as its own process, on this test's database."""
    with tenure_service(database_url=database_url, TENURE_POOL_MIN_SIZE="1") as service:
        yield service.url


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


def worker(processes: Processes, *arguments: str) -> subprocess.Popen[str]:
    return processes.start(sys.executable, str(WORKER), *arguments)
