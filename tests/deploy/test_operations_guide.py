"""docs/operations.md is executable: its Kubernetes manifests validate, and its least-privilege
SQL and generation bump, run against a real PostgreSQL, leave a runtime role that serves the whole
API yet cannot delete leases, and a bump that refuses every generation handed out before it."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import kubernetes_validate
import pytest
import yaml

from tenure_server.db.migrate import migrate
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support import postgres
from tests.support.lifespan import running

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operations.md"
ROLES = ("tenure_migrate", "tenure_runtime", "tenure_app")
BUMP = 1_000_000


def blocks(language: str) -> list[str]:
    """The guide's fenced code blocks in one language, in order."""
    text = GUIDE.read_text("utf-8")
    found = re.findall(rf"^ *```{language}\n(.*?)^ *```", text, flags=re.MULTILINE | re.DOTALL)
    return [textwrap.dedent(block) for block in found]


def statements(sql: str) -> list[str]:
    """A block's statements, comments dropped (CREATE DATABASE must run on its own)."""
    without_comments = re.sub(r"--[^\n]*", "", sql)
    return [part.strip() for part in without_comments.split(";") if part.strip()]


def test_guide_has_the_sql_it_promises() -> None:
    """Setup, grants and generation bump are three SQL blocks, in that order."""
    setup, grants, bump = blocks("sql")
    assert "CREATE ROLE tenure_app" in setup
    assert "GRANT SELECT, INSERT, UPDATE ON leases" in grants
    assert "DELETE" not in " ".join(statements(grants)).upper()
    assert "UPDATE leases" in bump


def test_kubernetes_manifests_in_the_guide_validate() -> None:
    """Every Kubernetes object in the guide is valid; the CloudNativePG Cluster asks for
    quorum synchronous replication that never falls back to asynchronous."""
    manifests = [doc for block in blocks("yaml") for doc in yaml.safe_load_all(block) if doc]
    objects = [m for m in manifests if "apiVersion" in m]
    assert {m["kind"] for m in objects} >= {"Cluster", "CronJob"}
    for manifest in objects:
        if manifest["apiVersion"] == "postgresql.cnpg.io/v1":
            synchronous = manifest["spec"]["postgresql"]["synchronous"]
            assert synchronous == {"method": "any", "number": 1, "dataDurability": "required"}
            assert manifest["spec"]["instances"] >= 3
            continue
        kubernetes_validate.validate(manifest, kubernetes_validate.latest_version(), strict=True)
    (cron_job,) = [m for m in objects if m["kind"] == "CronJob"]
    assert cron_job["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron_job["spec"]["startingDeadlineSeconds"] > 0
    (container,) = cron_job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["tenure", "run"]


def _renamed(sql: str, suffix: str, password: str) -> str:
    """The guide's SQL with unique role and database names, so it can run on a shared server."""
    for role in ROLES:
        sql = re.sub(rf"\b{role}\b", f"{role}_{suffix}", sql)
    sql = re.sub(r"DATABASE tenure\b", f"DATABASE tenure_{suffix}", sql)
    return sql.replace("'…'", f"'{password}'")


def _as(server: str, role: str, password: str, database: str) -> str:
    parts = urlsplit(server)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}:{password}@{host}", path="/" + database))


async def _execute(url: str, sql: str, *, one_by_one: bool) -> None:
    connection = await asyncpg.connect(url)
    try:
        for statement in statements(sql) if one_by_one else [sql]:
            await connection.execute(statement)
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with postgres.server(postgres.given_url()) as url:
        yield url


@pytest.fixture
async def guide_database(server: str) -> AsyncIterator[dict[str, str]]:
    """The guide's roles and database, created by its SQL and migrated as its migration role."""
    suffix = secrets.token_hex(4)
    # Hex: a urlsafe token may hold "--", which the statement splitter reads as a comment.
    password = secrets.token_hex(12)
    database = f"tenure_{suffix}"
    setup, grants, bump = blocks("sql")
    urls = {
        "migrate": _as(server, f"tenure_migrate_{suffix}", password, database),
        "app": _as(server, f"tenure_app_{suffix}", password, database),
        "bump": _renamed(bump, suffix, password),
    }
    try:
        await _execute(server, _renamed(setup, suffix, password), one_by_one=True)
        await migrate(urls["migrate"])
        await _execute(urls["migrate"], _renamed(grants, suffix, password), one_by_one=True)
        yield urls
    finally:
        await postgres.drop_database(server, database)
        connection = await asyncpg.connect(server)
        try:
            for role in reversed(ROLES):
                await connection.execute(f"DROP ROLE IF EXISTS {role}_{suffix}")
        finally:
            await connection.close()


async def _call(api: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post(path, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


@pytest.mark.slow
async def test_runtime_role_serves_the_api_but_cannot_delete(
    guide_database: dict[str, str],
) -> None:
    """As the guide's runtime role the service is ready and every write works; DELETE, TRUNCATE
    and DDL are refused."""
    settings = Settings(database_url=guide_database["app"], migrate_on_start=False, pool_min_size=1)
    app = create_app(settings)
    async with (
        running(app) as served,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t") as api,
    ):
        assert (await api.get("/readyz")).status_code == 200
        lease = await _call(api, "/v1/leases/report/acquire", {"holder": "a", "ttl_seconds": 30})
        holding = {"holder": "a", "generation": lease["generation"]}
        renewed = await _call(api, "/v1/leases/report/renew", holding | {"ttl_seconds": 30})
        window = holding | {"lease": "report"}
        await _call(api, "/v1/jobs/report/windows/2030-01-01/claim", window)
        await _call(api, "/v1/jobs/report/windows/2030-01-01/complete", window)
        fence = {"lease": "report", "generation": lease["generation"]}
        await _call(api, "/v1/fences/store/verify", fence)
        await _call(api, "/v1/leases/report/release", holding | {"grant": renewed["grant"]})

    connection = await asyncpg.connect(guide_database["app"])
    try:
        for forbidden in ("DELETE FROM leases", "TRUNCATE leases", "CREATE TABLE t (a int)"):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await connection.execute(forbidden)
    finally:
        await connection.close()


@pytest.mark.slow
async def test_generation_bump_refuses_every_earlier_generation(
    guide_database: dict[str, str],
) -> None:
    """After the guide's bump, the old holder can neither renew nor pass the fence, and the next
    holder's generation is above everything handed out before."""
    settings = Settings(database_url=guide_database["app"], migrate_on_start=False, pool_min_size=1)
    app = create_app(settings)
    async with (
        running(app) as served,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t") as api,
    ):
        old = await _call(api, "/v1/leases/report/acquire", {"holder": "a", "ttl_seconds": 60})
        await _call(api, "/v1/fences/store/verify", {"lease": "report", "generation": 1})

        await _execute(guide_database["migrate"], guide_database["bump"], one_by_one=False)

        renew = {"holder": "a", "generation": old["generation"], "ttl_seconds": 60}
        assert (await api.post("/v1/leases/report/renew", json=renew)).status_code == 409
        stale = {"lease": "report", "generation": old["generation"]}
        assert (await api.post("/v1/fences/store/verify", json=stale)).status_code == 409
        new = await _call(api, "/v1/leases/report/acquire", {"holder": "b", "ttl_seconds": 60})
        assert new["generation"] == old["generation"] + BUMP + 1
        await _call(
            api, "/v1/fences/store/verify", {"lease": "report", "generation": new["generation"]}
        )


def test_the_chart_renders_without_a_helm_binary_as_the_guide_says(tmp_path: Path) -> None:
    """The guide's block that renders the chart with helm-python-sdk writes the release's
    manifests, the Deployment and the migration Job among them."""
    (script,) = [block for block in blocks("sh") if "helm_python" in block]
    (tmp_path / "helm").symlink_to(ROOT / "helm")
    subprocess.run(
        ["bash", "-c", script.replace(".venv/bin/python", sys.executable)],
        cwd=tmp_path,
        check=True,
        timeout=120,
    )
    manifests = [
        doc for doc in yaml.safe_load_all((tmp_path / "tenure.yaml").read_text("utf-8")) if doc
    ]
    assert {m["kind"] for m in manifests} >= {"Deployment", "Job", "Service", "ConfigMap"}
