"""Liveness and readiness."""

from __future__ import annotations

import asyncpg
import httpx

from tests.api.test_leases import problem
from tests.support.postgres import unreachable


async def test_a_migrated_reachable_service_is_live_and_ready(api: httpx.AsyncClient) -> None:
    """/healthz and /readyz answer 200 when the database is up and migrated."""
    assert (await api.get("/healthz")).json() == {"status": "ok"}
    assert (await api.get("/readyz")).json() == {"status": "ok"}


async def test_not_ready_while_migrations_are_missing(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """A schema behind this version makes /readyz 503 storage-unavailable."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("DELETE FROM tenure_migrations")
    finally:
        await connection.close()
    problem(await api.get("/readyz"), 503, "storage-unavailable")
    assert (await api.get("/healthz")).status_code == 200


async def test_not_ready_while_the_database_is_unreachable(
    api: httpx.AsyncClient, database_url: str, server_url: str
) -> None:
    """With its connections cut and new ones refused, /readyz and the API answer 503 with
    Retry-After instead of hanging or failing with 500."""
    async with unreachable(server_url, database_url):
        problem(await api.get("/readyz"), 503, "storage-unavailable")
        response = await api.post("/v1/leases/x/acquire", json={"holder": "a", "ttl_seconds": 30})
        problem(response, 503, "storage-unavailable")
        assert int(response.headers["retry-after"]) >= 1
    recovered = await api.post("/v1/leases/x/acquire", json={"holder": "a", "ttl_seconds": 30})
    assert recovered.status_code == 200, recovered.text
