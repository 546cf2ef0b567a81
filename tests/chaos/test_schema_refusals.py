"""The negative control of the rolling-upgrade run's "no request refused for a schema reason"
(`chaos.upgrade.schema_refusals`, a scan of what the replicas logged): replicas that do meet a
schema they were not written for, whose refusals the scan must count — so that the upgrade run's
check can fail. Each starts a real `tenure serve` of one release on a database at another's
schema, as the upgrade run starts its replicas (their settings, their log folder).

- the current release on the previous release's schema (no migration on start): its readiness
  check refuses ("schema is behind") and an acquire calls a function the schema lacks;
- the previous release on the current schema less a function it calls (a contract step taken
  while old replicas still serve): its acquire fails on the missing function.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from chaos.cluster import service_env
from chaos.upgrade import previous_migrations, schema_refusals

from tenure_server.db.migrate import migrate
from tests.support import postgres
from tests.support.postgres import execute
from tests.support.processes import TENURE, free_port, running, tenure_command

pytestmark = pytest.mark.slow

ACQUIRE = {"holder": "schema-control", "ttl_seconds": 5}
# The previous release's acquire decides with this function (migration 0008); the current
# schema keeps it for old replicas (expand, then contract).
PREVIOUS_DECISION = "tenure_may_acquire_v1(leases, text, text, timestamptz)"


@pytest.fixture
async def previous_schema(server_url: str) -> AsyncIterator[str]:
    """A database at the previous release's schema, as the upgrade run starts from."""
    name = postgres.unique_name("tenure_prev")
    url = await postgres.create_database(server_url, name)
    await migrate(url, migrations=previous_migrations())
    yield url
    await postgres.drop_database(server_url, name)


@contextmanager
def replica(tenure: Path, database_url: str, run: Path) -> Iterator[httpx.Client]:
    """`tenure serve` of the release whose command is `tenure`, with the upgrade run's settings
    and no migration on start, logging to `run/logs/service0.log`; ready once it answers (its
    readiness is what is checked)."""
    (run / "logs").mkdir(parents=True)
    env = service_env(database_url, run / "service", {"TENURE_MIGRATE_ON_START": "false"})
    port = free_port()
    command = tenure_command(port, tenure=tenure)
    with (
        (run / "logs" / "service0.log").open("wb") as log,
        running(command, port, env=env, output=log, ready_path="/healthz"),
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client,
    ):
        yield client


def test_a_current_replica_on_the_previous_schema_is_counted(
    previous_schema: str, tmp_path: Path
) -> None:
    """The current release on the previous release's schema refuses readiness and fails an
    acquire on a function the schema lacks; the scan counts both."""
    with replica(TENURE, previous_schema, tmp_path) as client:
        assert client.get("/readyz").status_code == 503
        assert client.post("/v1/leases/schema.control/acquire", json=ACQUIRE).status_code == 500
    refusals = schema_refusals(tmp_path)
    assert refusals.get("schema is behind", 0) >= 1, refusals
    assert refusals.get("UndefinedFunctionError", 0) >= 1, refusals


async def test_a_previous_replica_missing_a_function_is_counted(
    previous_release_tenure: Path, database_url: str, tmp_path: Path
) -> None:
    """The previous release on the current schema less a function its acquire calls: the
    acquire fails, and the scan counts it."""
    await execute(database_url, f"DROP FUNCTION {PREVIOUS_DECISION}")
    with replica(previous_release_tenure, database_url, tmp_path) as client:
        assert client.get("/readyz").status_code == 200
        assert client.post("/v1/leases/schema.control/acquire", json=ACQUIRE).status_code == 500
    assert schema_refusals(tmp_path).get("UndefinedFunctionError", 0) >= 1
