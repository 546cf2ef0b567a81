"""GET /ui in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright loads
the page for a seeded database; the job rows, their statuses and a lease are checked, and a
screenshot is saved under artifacts/."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest

from tests.api.test_leases import release
from tests.ui.browser import ARTIFACTS, chromium

pytestmark = pytest.mark.slow


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
    async with chromium() as browser:
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
        # Without JavaScript a meta refresh would reload it; with it, the page follows the
        # event stream (tests/ui/test_dashboard_live.py).
        assert "<noscript><meta http-equiv='refresh'" in await page.content()
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
