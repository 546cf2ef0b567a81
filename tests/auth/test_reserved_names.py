"""Names under `tenure.` are the service's own: no caller acts under them (a `*` token, an admin,
the anonymous caller with authentication off), on either lane of every route that acts under a
name, and nothing is written; reads, job deletion and force-release stay."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import httpx
import pytest
from starlette.routing import compile_path

from tenure_server.api.hot_routes import HOT_ROUTES
from tenure_server.db.leases import QUERIES
from tests.api.test_express import EXPRESS, FASTAPI
from tests.api.test_leases import problem
from tests.support.tokens import bearer, register_old_job

HOLDING = {"holder": "squatter", "generation": 1}
JOB = {"schedule": "0 3 * * *", "timezone": "UTC"}
# (method, path, body): each names a reserved name in one place, the others ordinary.
RESERVED_WRITES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/leases/tenure.monitor/acquire", {"holder": "squatter", "ttl_seconds": 3600}),
    (
        "POST",
        "/v1/leases/tenure.monitor/acquire",
        {"holder": "squatter", "ttl_seconds": 3600, "wait_seconds": 60},
    ),
    ("POST", "/v1/leases/tenure.monitor/renew", {**HOLDING, "ttl_seconds": 3600}),
    ("POST", "/v1/leases/tenure.monitor/release", {**HOLDING, "grant": "1"}),
    (
        "POST",
        "/v1/leases/renew",
        {
            "holder": "squatter",
            "ttl_seconds": 3600,
            "leases": [
                {"name": "own", "generation": 1},
                {"name": "tenure.monitor", "generation": 1},
            ],
        },
    ),
    ("POST", "/v1/fences/tenure.store/verify", {"lease": "own", "generation": 1}),
    ("POST", "/v1/fences/store/verify", {"lease": "tenure.monitor", "generation": 1}),
    (
        "POST",
        "/v1/fences/verify",
        {
            "fences": [
                {"resource": "store", "lease": "own", "generation": 1},
                {"resource": "other", "lease": "tenure.monitor", "generation": 1},
            ]
        },
    ),
    ("POST", "/v1/jobs/tenure.nightly/windows/w1/claim", {**HOLDING, "lease": "own"}),
    ("POST", "/v1/jobs/nightly/windows/w1/claim", {**HOLDING, "lease": "tenure.monitor"}),
    ("POST", "/v1/jobs/tenure.nightly/windows/w1/complete", {**HOLDING, "lease": "own"}),
    ("POST", "/v1/jobs/nightly/windows/w1/complete", {**HOLDING, "lease": "tenure.monitor"}),
    ("PUT", "/v1/jobs/tenure.nightly", JOB),
    ("PUT", "/v1/jobs/nightly", {**JOB, "lease": "tenure.monitor"}),
]
LANES = {"express": EXPRESS, "fastapi": FASTAPI}
# Every row the service writes for a name, by table: none may appear for a refused request.
WRITTEN = (
    "SELECT 'leases', name FROM leases UNION ALL SELECT 'lease_events', lease FROM lease_events"
    " UNION ALL SELECT 'fences', resource FROM fences"
    " UNION ALL SELECT 'fence_events', resource FROM fence_events"
    " UNION ALL SELECT 'jobs', name FROM jobs UNION ALL SELECT 'job_events', job FROM job_events"
    " UNION ALL SELECT 'job_windows', job FROM job_windows"
)


async def written(database_url: str) -> list[tuple[str, str]]:
    connection = await asyncpg.connect(database_url)
    try:
        return [tuple(row) for row in await connection.fetch(WRITTEN)]
    finally:
        await connection.close()


def test_every_hot_route_is_among_the_refused_writes() -> None:
    """The requests below reach every hot route: one added later fails here until it is."""
    covered = {
        route.path
        for route in HOT_ROUTES
        for method, path, _ in RESERVED_WRITES
        if method == route.method and compile_path(route.path)[0].match(path)
    }
    assert covered == {route.path for route in HOT_ROUTES}


async def refuse_everything(api: httpx.AsyncClient, headers: dict[str, str]) -> None:
    for method, path, body in RESERVED_WRITES:
        for lane in LANES.values() if method == "POST" else [EXPRESS]:
            response = await api.request(
                method, path, content=json.dumps(body), headers={**headers, **lane}
            )
            refusal = problem(response, 403, "reserved-name")
            assert refusal["name"].startswith("tenure."), refusal
            assert "reserved to the service" in refusal["detail"]


@pytest.mark.parametrize("principal", ["every-client", "admin"])
async def test_no_token_acts_under_a_reserved_name(
    secured: httpx.AsyncClient, database_url: str, principal: str
) -> None:
    """A token whose namespaces cover every name (`*`), an admin's included, is refused 403
    `reserved-name` by every route that acts under a lease, job or resource name, on both lanes,
    a waiting acquire at once; and nothing is written."""
    await refuse_everything(secured, bearer(principal))
    assert await written(database_url) == []


async def test_nor_does_the_anonymous_caller_without_authentication(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """With authentication off, the anonymous caller (an admin of every name) is refused alike."""
    await refuse_everything(api, {})
    assert await written(database_url) == []


async def test_a_holding_from_before_the_reservation_can_neither_be_renewed_nor_released(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    """A client's holding of a reserved name, taken before names under `tenure.` were reserved,
    is out of its reach: renew and release with its own holder, generation and grant are refused
    and leave the row as it was."""
    connection = await asyncpg.connect(database_url)
    try:
        taken = await connection.fetchrow(
            QUERIES["acquire_lease"], "tenure.backup", "squatter", 3600, "every-client"
        )
        assert taken is not None
        before = await connection.fetchrow("SELECT * FROM leases")
        client = bearer("every-client")
        holding = {"holder": "squatter", "generation": taken["generation"]}
        lease = "/v1/leases/tenure.backup"
        renew = await secured.post(
            f"{lease}/renew", json={**holding, "ttl_seconds": 3600}, headers=client
        )
        problem(renew, 403, "reserved-name")
        release = await secured.post(
            f"{lease}/release", json={**holding, "grant": taken["grant_id"]}, headers=client
        )
        problem(release, 403, "reserved-name")
        assert await connection.fetchrow("SELECT * FROM leases") == before
    finally:
        await connection.close()


async def test_reads_deletion_and_force_release_stay(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    """Reading and listing reserved names stay open to readers of them, a job registered under
    one before the reservation can be deleted, and an admin can still force-release a stuck
    holding of one."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.fetchrow(
            QUERIES["acquire_lease"], "tenure.monitor", "stuck", 3600, "every-client"
        )
    finally:
        await connection.close()
    await register_old_job(database_url)
    client, admin = bearer("every-client"), bearer("admin")
    read = await secured.get("/v1/leases/tenure.monitor", headers=client)
    assert (read.status_code, read.json()["holder"]) == (200, "stuck"), read.text
    listed = await secured.get("/v1/leases?prefix=tenure.", headers=client)
    assert [item["name"] for item in listed.json()["items"]] == ["tenure.monitor"]
    assert (await secured.get("/v1/jobs/tenure.nightly", headers=client)).status_code == 200
    deleted = await secured.delete("/v1/jobs/tenure.nightly", headers=client)
    assert deleted.status_code == 204, deleted.text
    forced = await secured.post("/v1/leases/tenure.monitor/force-release", headers=admin)
    assert (forced.status_code, forced.json()["held"]) == (200, False), forced.text
