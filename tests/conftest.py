"""Fixtures shared by every test folder: the database server, a fresh database per test, the
service app on that database, the service over real HTTP in this process, and the processes a
test starts. The helpers behind them are in tests/support/ (tests/README.md lists them)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from tenure_server.db.migrate import migrate
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support import postgres
from tests.support.lifespan import Running, running
from tests.support.live_service import LiveService, StartService
from tests.support.processes import Processes


@pytest.fixture(scope="session", autouse=True)
def _no_tracing_from_the_environment() -> None:
    """Tracing is on when OTEL_* variables say so (docs/tracing.md): a developer's or CI's own
    must not turn it on in every app the tests build; the tracing tests set theirs."""
    for variable in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[variable]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with postgres.server(postgres.given_url()) as url:
        yield url


@pytest.fixture(scope="session")
def template_database(server_url: str) -> Iterator[str]:
    """A database migrated once; each test copies it."""
    name = postgres.unique_name("tenure_tpl")

    async def build() -> None:
        await migrate(await postgres.create_database(server_url, name))

    asyncio.run(build())
    yield name
    asyncio.run(postgres.drop_database(server_url, name))


@pytest.fixture
async def database_url(server_url: str, template_database: str) -> AsyncIterator[str]:
    name = postgres.unique_name("tenure_t")
    url = await postgres.create_database(server_url, name, template=template_database)
    yield url
    await postgres.drop_database(server_url, name)


@pytest.fixture
async def connection(database_url: str) -> AsyncIterator[asyncpg.Connection[asyncpg.Record]]:
    """A plain connection to this test's database, for statements run as the service runs them."""
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=20)


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Running]:
    """The app, its lifespan running, as a server calls it (with its services)."""
    async with running(create_app(settings)) as served:
        yield served


@pytest.fixture
async def api(app: Running) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client wired to the app in this process (no socket), on a fresh database."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as client:
        yield client


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


@pytest.fixture
def start_service(database_url: str) -> Iterator[StartService]:
    """Starts the real service on a free loopback port (a thread of this process), on this test's
    database, with the settings given (`start_service(max_batch_size=1)`); each is stopped after
    the test."""
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
