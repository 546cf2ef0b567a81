"""Fixtures of the integration tests: the repository on a pool of this test's database, as the
service builds it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tenure_server.db.pool import create_pool
from tenure_server.db.repository import Repository


@pytest.fixture
async def repository(database_url: str) -> AsyncIterator[Repository]:
    pool = await create_pool(
        database_url, min_size=1, max_size=8, statement_timeout_ms=5000, lock_timeout_ms=4000
    )
    try:
        yield Repository(pool, acquire_timeout=5)
    finally:
        await pool.close()
