"""An app with authentication on: five principals with different roles and namespaces."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from tenure.auth import hash_token
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support.lifespan import running

TOKENS = {
    "admin": "tnr_admin-token",
    "billing-client": "tnr_billing-client-token",
    "billing-reader": "tnr_billing-reader-token",
    "ops-client": "tnr_ops-client-token",
    "every-client": "tnr_every-client-token",
}
ROLES = {
    "admin": (["admin"], ["*"]),
    "billing-client": (["client"], ["billing."]),
    "billing-reader": (["reader"], ["billing."]),
    "ops-client": (["client"], ["ops."]),
    "every-client": (["client"], ["*"]),
}


def tokens_toml() -> str:
    entries = []
    for principal, token in TOKENS.items():
        roles, namespaces = ROLES[principal]
        entries.append(
            f'[[token]]\nprincipal = "{principal}"\nsha256 = "{hash_token(token)}"\n'
            f"roles = {roles!r}\nnamespaces = {namespaces!r}\n".replace("'", '"')
        )
    return "\n".join(entries)


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[principal]}"}


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


async def register_old_job(database_url: str) -> None:
    """A job registered under `tenure.` before the names were reserved."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "INSERT INTO jobs (name, schedule, timezone, key_format, lease, deadline_seconds,"
            " created_at, updated_at, active_since)"
            " VALUES ('tenure.nightly', '0 3 * * *', 'UTC', 'date', 'tenure.nightly', 60,"
            " now(), now(), now())"
        )
    finally:
        await connection.close()
