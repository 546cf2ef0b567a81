"""An app with authentication on: the five principals of `tests.support.tokens`, with different
roles and namespaces."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support.lifespan import running
from tests.support.tokens import tokens_toml


@pytest.fixture
def auth_settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, tokens=SecretStr(tokens_toml()))


@pytest.fixture
async def secured(auth_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(auth_settings)
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as api:
            yield api
