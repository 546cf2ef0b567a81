"""Fixtures shared by every test folder: the database server, a fresh database per test, the
service app on that database, and the processes a test starts."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest

from tenure_server.db.migrate import migrate
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests import postgres
from tests.client.conftest import Processes
from tests.support.lifespan import Running, running


@pytest.fixture(scope="session", autouse=True)
def _no_tracing_from_the_environment() -> None:
    """Tracing is on when OTEL_* variables say so (docs/tracing.md): a developer's or CI's own
    must not turn it on in every app the tests build; the tracing tests set theirs."""
    for variable in [name for name in os.environ if name.startswith("OTEL_")]:
        del os.environ[variable]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with postgres.server() as url:
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
