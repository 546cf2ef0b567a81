"""GET /ui in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright loads
the page for a seeded database; the job rows, their statuses and a lease are checked, and a
screenshot is saved under artifacts/."""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from tests.api.test_leases import release

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

playwright_api = pytest.importorskip(
    "playwright.async_api",
    reason="Python Playwright is not installed (pip install playwright); browser test skipped",
)
if not CHROMIUM.exists() and shutil.which("chromium") is None:
    pytest.skip(
        "no Chromium at /usr/bin/chromium (apt-get install -y chromium); browser test skipped",
        allow_module_level=True,
    )

pytestmark = pytest.mark.slow


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The test's app (lifespan already running) on a real loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_level="warning", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(1000):  # up to 10 s
        if server.started:
            break
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task
    sock.close()


async def seed(api: httpx.AsyncClient, database_url: str) -> None:
    """Four jobs, one in each of the statuses ok, missed, running and new, and a held lease."""
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    daily = {"schedule": f"{hour_ago.minute} {hour_ago.hour} * * *", "timezone": "UTC"}
    for name, deadline in (("close-day", 3600), ("send-invoices", 60), ("refresh-cache", 86400)):
        body = daily | {"key": "date", "deadline_seconds": deadline}
        assert (await api.put(f"/v1/jobs/{name}", json=body)).status_code == 200
    weekly = {"schedule": "0 6 * * 1", "timezone": "Europe/Lisbon"}
    assert (await api.put("/v1/jobs/weekly-report", json=weekly)).status_code == 200
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE jobs SET active_since = now() - interval '2 days' WHERE name <> 'weekly-report'"
        )
    finally:
        await connection.close()
    window = (await api.get("/v1/jobs/close-day")).json()["status"]["window"]
    for job, holder, finish in (
        ("close-day", "worker-3", True),
        ("refresh-cache", "worker-7", False),
    ):
        lease = await api.post(
            f"/v1/leases/{job}/acquire", json={"holder": holder, "ttl_seconds": 300}
        )
        holding = {"holder": holder, "lease": job, "generation": lease.json()["generation"]}
        await api.post(f"/v1/jobs/{job}/windows/{window}/claim", json=holding)
        if finish:
            await api.post(f"/v1/jobs/{job}/windows/{window}/complete", json=holding)
            assert (await release(api, lease.json())).status_code == 200


async def test_dashboard_in_a_real_browser(
    api: httpx.AsyncClient, database_url: str, served: str
) -> None:
    """The page lists each job with its status colour, the held lease with holder and
    generation, and reads well at a laptop's size."""
    await seed(api, database_url)
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            page = await browser.new_page(viewport={"width": 1440, "height": 900})
            response = await page.goto(f"{served}/ui")
            assert response is not None
            assert response.status == 200
            assert await page.title() == "Tenure"
            statuses = {
                await row.get_attribute("data-job"): await row.get_attribute("data-status")
                for row in await page.query_selector_all("tr[data-job]")
            }
            assert statuses == {
                "close-day": "ok",
                "refresh-cache": "running",
                "send-invoices": "missed",
                "weekly-report": "new",
            }
            missed = page.locator('tr[data-job="send-invoices"] .pill')
            ok = page.locator('tr[data-job="close-day"] .pill')
            colour = "el => getComputedStyle(el).backgroundColor"
            assert await missed.evaluate(colour) != await ok.evaluate(colour)
            lease = page.locator('tr[data-lease="refresh-cache"]')
            text = await lease.inner_text()
            assert "worker-7" in text
            assert "held" in text
            assert await page.locator("meta[http-equiv=refresh]").count() == 1
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
        finally:
            await browser.close()
