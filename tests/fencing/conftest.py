"""Fixtures for the fencing tests: `tenure serve` as its own process (the service in a thread of
this one is tests/conftest.py's `service`), and a second database that plays the protected
service's own (the protected service is the payments example, `tests.support.payments`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from tests.support import postgres
from tests.support.processes import tenure_service


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
