"""The browser tests' service on a real loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support.event_streams import served as serving


@pytest.fixture
async def served(settings: Settings) -> AsyncIterator[str]:
    """The URL of an app with the test's settings (on the test's database) behind uvicorn, as
    `tenure serve` runs it; the `api` fixture's app shares the database, not the process."""
    async with serving(create_app(settings)) as client:
        yield str(client.base_url).rstrip("/")
