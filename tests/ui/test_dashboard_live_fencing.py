"""GET /ui shows the fencing story as it happens (headless Chromium through Playwright): a
refused verify and an operator's force-release reach the open page through the event stream and
appear under "Recent events" without a reload."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tenure import AsyncTenure, StaleGeneration
from tests.ui.browser import chromium
from tests.ui.test_dashboard_live import SHOWN_WITHIN_MS, assert_not_reloaded, open_marked

pytestmark = pytest.mark.slow

# Longer than the page's debounce and fetch after an event.
QUIET_SECONDS = 1.5


async def test_a_fence_rejection_and_a_force_release_show_without_reload(served: str) -> None:
    """A stale verify of `payouts` and the force-release of `daily-close` each add their row to
    Recent events while the page stays loaded."""
    async with (
        chromium() as browser,
        AsyncTenure(served, holder="worker-a") as a,
        AsyncTenure(served, holder="worker-b") as b,
        httpx.AsyncClient(base_url=served, timeout=30) as operator,
    ):
        page, navigations = await open_marked(browser, f"{served}/ui")
        await page.wait_for_selector('#live[data-state="live"]', timeout=SHOWN_WITHIN_MS)
        old = await a.acquire("daily-close", ttl=30)
        await a.release(old)
        new = await b.acquire("daily-close", ttl=30)
        await b.verify_fence("payouts", "daily-close", new.generation)
        # The page has caught up with the grant, and is left quiet: only the rejection's own
        # event can bring its row.
        lease = page.locator('tr[data-lease="daily-close"]')
        await lease.get_by_text("worker-b").wait_for(timeout=SHOWN_WITHIN_MS)
        await asyncio.sleep(QUIET_SECONDS)
        with pytest.raises(StaleGeneration):
            await b.verify_fence("payouts", "daily-close", old.generation)
        events = page.locator("#events")
        rejected = events.locator("tr", has_text="payouts")
        await rejected.wait_for(timeout=SHOWN_WITHIN_MS)
        assert "stale_generation" in await rejected.inner_text()

        forced = await operator.post("/v1/leases/daily-close/force-release")
        assert forced.status_code == 200, forced.text
        await events.locator("tr", has_text="force_released").wait_for(timeout=SHOWN_WITHIN_MS)
        await assert_not_reloaded(page, navigations)
