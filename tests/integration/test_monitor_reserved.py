"""The monitor's lease is the service's own: no client keeps it, and a client's holding of it
from before the reservation is taken over at once; start-up names the deployment's own leases and
jobs under `tenure.`."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from pydantic import SecretStr

from tenure_server.adapters.monitor import MONITOR_LEASE
from tenure_server.db.leases import QUERIES
from tests.integration.test_monitor import client, eventually, fast_settings, running, sql
from tests.support.tokens import bearer, tokens_toml

SQUATTER = bearer("every-client")


async def squat(api: httpx.AsyncClient, answers: list[int]) -> None:
    """A client of every name that tries to take the monitor's lease for an hour, and renews it
    whenever it has it, without pause."""
    generation = None
    while True:
        if generation is None:
            body = {"holder": "squatter", "ttl_seconds": 3600}
            response = await api.post(f"/v1/leases/{MONITOR_LEASE}/acquire", json=body)
        else:
            body = {"holder": "squatter", "generation": generation, "ttl_seconds": 3600}
            response = await api.post(f"/v1/leases/{MONITOR_LEASE}/renew", json=body)
        answers.append(response.status_code)
        generation = response.json()["generation"] if response.status_code == 200 else None
        await asyncio.sleep(0.01)


async def test_the_monitor_leads_again_after_a_restart_while_a_star_client_keeps_trying(
    database_url: str,
) -> None:
    """A client whose token covers every name (`*`) keeps trying to take `tenure.monitor`
    through a second replica while the monitor's replica restarts, and so releases the lease:
    every try is refused, and the restarted replica leads at its first pass."""
    tokens = SecretStr(tokens_toml())
    monitoring = fast_settings(database_url, tokens=tokens)
    serving = fast_settings(database_url, tokens=tokens, monitor_enabled=False)
    answers: list[int] = []
    async with running(serving) as (replica,), client(replica) as api:
        api.headers.update(SQUATTER)
        async with running(monitoring) as (first,):
            await eventually(lambda: first.monitor.holding is not None)
        squatter = asyncio.create_task(squat(api, answers))
        try:
            await eventually(lambda: len(answers) >= 20)  # tried while no monitor ran
            async with running(monitoring) as (restarted,):
                monitor = restarted.monitor
                await eventually(lambda: monitor.holding is not None)
                lease = (await api.get(f"/v1/leases/{MONITOR_LEASE}")).json()
                assert (lease["holder"], lease["held"]) == (monitor.holder, True)
        finally:
            squatter.cancel()
    assert set(answers) == {403}


async def test_a_client_s_holding_from_before_is_taken_over_at_start_up(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A client's holding of `tenure.monitor` taken before the names were reserved (for an hour)
    is not honoured: the first pass takes it over, generation + 1, recorded as a takeover from
    that holder, with a warning that names it."""
    (squatted,) = await sql(
        database_url, QUERIES["acquire_lease"], MONITOR_LEASE, "squatter", 3600, "every-client"
    )
    generation = squatted["generation"]
    with caplog.at_level(logging.WARNING, logger="tenure.server"):
        async with running(fast_settings(database_url)) as (app,):
            monitor = app.monitor
            await eventually(lambda: monitor.holding is not None, within=5)
            assert monitor.holding is not None
            assert monitor.holding.generation == generation + 1
    events = await sql(
        database_url,
        "SELECT kind, holder, generation, previous_holder, previous_generation"
        " FROM lease_events WHERE lease = $1 ORDER BY id",
        MONITOR_LEASE,
    )
    assert [tuple(row) for row in events[:2]] == [
        ("acquired", "squatter", generation, None, None),
        ("taken_over", monitor.holder, generation + 1, "squatter", generation),
    ]
    (warning,) = [r.getMessage() for r in caplog.records if "not honoured" in r.getMessage()]
    assert MONITOR_LEASE in warning
    assert "'squatter'" in warning
    assert "every-client" in warning


async def test_start_up_names_the_deployment_s_own_leases_and_jobs_under_tenure(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One warning at start-up names the leases in recent use and the live jobs under `tenure.`
    (by name or by lease) of the deployment's own; not the service's own lease, nor a lease
    unused for longer than the history is kept, nor a deleted job."""
    for lease in ("tenure.backup", "tenure.old", MONITOR_LEASE, "ordinary"):
        await sql(database_url, QUERIES["acquire_lease"], lease, "h", 60, None)
    await sql(
        database_url,
        "UPDATE leases SET renewed_at = now() - interval '60 days' WHERE name = 'tenure.old'",
    )
    await sql(
        database_url,
        "INSERT INTO jobs (name, schedule, timezone, key_format, lease, deadline_seconds,"
        " created_at, updated_at, active_since, deleted_at)"
        " SELECT job, '0 3 * * *', 'UTC', 'date', lease, 60, now(), now(), now(), deleted"
        " FROM (VALUES ('tenure.nightly', 'tenure.nightly', NULL::timestamptz),"
        " ('reports', 'tenure.reports', NULL), ('tenure.gone', 'tenure.gone', now()),"
        " ('daily', 'daily', NULL)) AS j(job, lease, deleted)",
    )
    with caplog.at_level(logging.WARNING, logger="tenure.server"):
        async with running(fast_settings(database_url, monitor_enabled=False)):
            pass
    (warning,) = [r for r in caplog.records if "reserved to the service" in r.getMessage()]
    assert warning.__dict__["leases"] == ["tenure.backup"]
    assert warning.__dict__["jobs"] == ["reports (lease tenure.reports)", "tenure.nightly"]
    assert "403 reserved-name" in warning.getMessage()
