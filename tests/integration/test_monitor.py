"""The monitor loop against a real database: two service instances, one alert, one resolution;
stuck leases; retention."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx

from tenure_server.adapters.monitor import MONITOR_LEASE
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_leases import release
from tests.integration.webhook_receiver import Receiver, webhook_receiver
from tests.support import lifespan
from tests.support.lifespan import Running

INTERVAL = 0.2


def fast_settings(database_url: str, receiver: Receiver | None = None, **more: Any) -> Settings:
    hooks: dict[str, Any] = {}
    if receiver is not None:
        hooks = {
            "alert_webhook_urls": [f"{receiver.url}/json"],
            "alert_slack_webhook_urls": [f"{receiver.url}/slack"],
        }
    fast: dict[str, Any] = {
        "pool_min_size": 1,
        "pool_max_size": 5,
        "monitor_interval_seconds": INTERVAL,
        "monitor_lease_ttl_seconds": 2,
        "webhook_retry_base_seconds": 0.1,
        "webhook_timeout_seconds": 2,
    }
    return Settings(database_url=database_url, **{**fast, **hooks, **more})


@asynccontextmanager
async def running(*settings: Settings) -> AsyncIterator[list[Running]]:
    """Service instances, each with its own pool and monitor loop, on one database."""
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(lifespan.running(create_app(each))) for each in settings
        ]


def client(app: Running) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def sql(database_url: str, statement: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(database_url)
    try:
        return await connection.fetch(statement, *args)
    finally:
        await connection.close()


async def eventually(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def overdue_job(api: httpx.AsyncClient, database_url: str, name: str) -> str:
    """A daily job whose occurrence was an hour ago with a 60 s deadline, registered as if two
    days ago: its current window is missed. Returns that window's key."""
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    body = {
        "schedule": f"{hour_ago.minute} {hour_ago.hour} * * *",
        "timezone": "UTC",
        "key": "date",
        "deadline_seconds": 60,
    }
    response = await api.put(f"/v1/jobs/{name}", json=body)
    assert response.status_code == 200, response.text
    await sql(
        database_url,
        "UPDATE jobs SET active_since = active_since - interval '2 days' WHERE name = $1",
        name,
    )
    window: str = response.json()["status"]["window"]
    return window


async def complete(api: httpx.AsyncClient, job: str, window: str) -> None:
    lease = await api.post(f"/v1/leases/{job}/acquire", json={"holder": "w", "ttl_seconds": 30})
    holding = {"holder": "w", "lease": job, "generation": lease.json()["generation"]}
    for action in ("claim", "complete"):
        answer = await api.post(f"/v1/jobs/{job}/windows/{window}/{action}", json=holding)
        assert answer.status_code == 200, answer.text


async def test_two_instances_send_one_alert_and_one_resolution(database_url: str) -> None:
    """With two instances running their monitor loops on one database, a missed window produces
    exactly one alert per webhook and, once completed, exactly one "resolved"; a webhook that
    fails is retried and every attempt is recorded."""
    with webhook_receiver() as receiver:
        receiver.failures["/slack"] = 1
        settings = fast_settings(database_url, receiver)
        async with running(settings, settings) as (first, second), client(first) as api:
            window = await overdue_job(api, database_url, "close-day")
            await eventually(lambda: bool(receiver.at("/json")) and bool(receiver.at("/slack")))
            await asyncio.sleep(6 * INTERVAL)  # both loops pass again: nothing more is sent

            (opened,) = receiver.at("/json")
            assert (opened["event"], opened["kind"], opened["job"], opened["window"]) == (
                "alert.opened",
                "missed",
                "close-day",
                window,
            )
            (slack,) = receiver.at("/slack")
            assert "missed" in slack["text"]
            assert len(receiver.at("/slack", ok=False)) == 2  # one 500, then the retry

            await complete(api, "close-day", window)
            await eventually(lambda: len(receiver.at("/json")) == 2)
            await asyncio.sleep(6 * INTERVAL)
            assert [body["event"] for body in receiver.at("/json")] == [
                "alert.opened",
                "alert.resolved",
            ]
            assert len(receiver.at("/slack")) == 2
            monitors = [app.monitor for app in (first, second)]
            assert sum(monitor.holding is not None for monitor in monitors) == 1

            history = (await api.get("/v1/jobs/close-day/events")).json()["items"]
            kinds = [item["kind"] for item in history]
            assert kinds.count("alert_opened") == kinds.count("alert_resolved") == 1

    alerts = await sql(database_url, "SELECT kind, resolved_at IS NOT NULL FROM alerts")
    assert [tuple(row) for row in alerts] == [("missed", True)]
    attempts = await sql(
        database_url,
        "SELECT d.target, a.ok FROM webhook_attempts a JOIN webhook_deliveries d"
        " ON d.id = a.delivery ORDER BY a.id",
    )
    slack_attempts = [row["ok"] for row in attempts if row["target"].startswith("slack:")]
    assert slack_attempts == [False, True, True]  # opened: failed, retried; resolved: first try
    assert all(row["ok"] for row in attempts if row["target"].startswith("json:"))


async def test_a_restarted_instance_does_not_resend(database_url: str) -> None:
    """Alert state lives in the database: a new instance taking over the monitor sends nothing
    that was already sent."""
    with webhook_receiver() as receiver:
        settings = fast_settings(database_url, receiver)
        async with running(settings) as (first,), client(first) as api:
            await overdue_job(api, database_url, "close-day")
            await eventually(lambda: bool(receiver.at("/json")))
        async with running(settings) as (restarted,):
            monitor = restarted.monitor
            await eventually(lambda: monitor.holding is not None)
            assert await monitor.run_pass()
            await monitor.deliver_due()
        assert len(receiver.at("/json")) == 1
    takeovers = await sql(
        database_url, "SELECT count(*) FROM lease_events WHERE lease = $1", MONITOR_LEASE
    )
    assert takeovers[0][0] >= 2  # released at shutdown, acquired by the next instance


async def test_a_stuck_lease_is_alerted_and_resolved_when_released(database_url: str) -> None:
    """A generation held longer than the bound opens a `stuck` alert, resolved on release."""
    settings = fast_settings(database_url, lease_stuck_after_seconds=3600)
    async with running(settings) as (app,), client(app) as api:
        monitor = app.monitor
        lease = await api.post(
            "/v1/leases/nightly/acquire", json={"holder": "h", "ttl_seconds": 60}
        )
        await sql(database_url, "UPDATE leases SET acquired_at = now() - interval '2 hours'")
        await eventually(lambda: monitor.holding is not None)
        assert await monitor.run_pass()
        overview = (await api.get("/v1/overview")).json()
        assert [(a["kind"], a["subject"]) for a in overview["alerts"]] == [("stuck", "nightly")]
        assert [item["stuck"] for item in overview["leases"] if item["name"] == "nightly"] == [True]
        assert (await release(api, lease.json())).status_code == 200
        assert await monitor.run_pass()
        assert (await api.get("/v1/overview")).json()["alerts"] == []


async def test_old_history_is_pruned_in_batches(database_url: str) -> None:
    """Events older than the retention are deleted by the monitor, in bounded batches; newer
    ones stay."""
    settings = fast_settings(database_url, event_retention_seconds=86400, retention_batch_size=2)
    await sql(
        database_url,
        "INSERT INTO lease_events (lease, kind, holder, generation, at)"
        " SELECT 'old', 'acquired', 'h', g, now() - interval '3 days'"
        " FROM generate_series(1, 5) AS g",
    )
    await sql(
        database_url,
        "INSERT INTO job_events (job, kind, at) VALUES ('old', 'registered', now() - interval"
        " '3 days'), ('new', 'registered', now())",
    )
    async with running(settings) as (app,), client(app) as api:
        monitor = app.monitor
        await eventually(lambda: monitor.holding is not None)
        await monitor.run_pass()
        await api.post("/v1/leases/fresh/acquire", json={"holder": "h", "ttl_seconds": 60})
    remaining = await sql(
        database_url, "SELECT lease FROM lease_events WHERE lease <> $1", MONITOR_LEASE
    )
    assert [row["lease"] for row in remaining] == ["fresh"]
    jobs = await sql(database_url, "SELECT job FROM job_events")
    assert [row["job"] for row in jobs] == ["new"]
