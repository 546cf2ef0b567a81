"""The monitor works as the operations guide's runtime role: it registers jobs, opens alerts,
queues webhooks, reads the overview and prunes history, all without DELETE."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.deploy.test_operations_guide import guide_database, server
from tests.support.lifespan import running

__all__ = ["guide_database", "server"]  # fixtures this module uses


@pytest.mark.slow
async def test_monitor_pass_as_the_runtime_role(guide_database: dict[str, str]) -> None:
    """One full monitor pass, a job registered and deleted, and /metrics, as tenure_app."""
    settings = Settings(
        database_url=guide_database["app"],
        migrate_on_start=False,
        pool_min_size=1,
        monitor_interval_seconds=60,
        monitor_lease_ttl_seconds=120,
        alert_webhook_urls=["http://127.0.0.1:9/hook"],
    )
    app = create_app(settings)
    async with (
        running(app) as served,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=served), base_url="http://t") as api,
    ):
        body = {"schedule": "* * * * *", "timezone": "UTC", "deadline_seconds": 1}
        assert (await api.put("/v1/jobs/report", json=body)).status_code == 200
        monitor = served.adapters.monitor
        assert monitor is not None
        assert await monitor.run_pass()
        await monitor.deliver_due()
        assert (await api.get("/v1/overview")).status_code == 200
        assert (await api.get("/metrics")).status_code == 200
        assert (await api.delete("/v1/jobs/report")).status_code == 204
        assert await monitor.run_pass()

    connection = await asyncpg.connect(guide_database["app"])
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await connection.execute("DELETE FROM lease_events")
        assert await connection.fetchval("SELECT tenure_prune_events(86400, 10)") == 0
    finally:
        await connection.close()
