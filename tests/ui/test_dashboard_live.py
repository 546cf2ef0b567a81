"""GET /ui follows the event stream in a real browser (headless Chromium through Playwright):
a lease acquired, then taken over after it expired, shows on the open page without a reload;
and with no stream to follow the page falls back to refreshing itself."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenure import AsyncTenure
from tests.ui.browser import chromium

pytestmark = pytest.mark.slow

# How long the page may take to show a change: the stream's delivery, a debounce and a fetch.
SHOWN_WITHIN_MS = 5000
ROW = 'tr[data-lease="nightly-close"]'


async def open_marked(browser: Any, url: str) -> tuple[Any, list[str]]:
    """The page at `url`, with a marker on its window (a reload would lose it), and the list
    the page's navigations are appended to."""
    page = await browser.new_page(viewport={"width": 1440, "height": 900})
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    response = await page.goto(url)
    assert response is not None
    assert response.status == 200
    await page.evaluate("window.tenureMarker = 'loaded once'")
    return page, navigations


async def assert_not_reloaded(page: Any, navigations: list[str]) -> None:
    assert await page.evaluate("window.tenureMarker") == "loaded once"
    assert len(navigations) == 1


async def test_a_takeover_shows_without_reload(served: str) -> None:
    """Holder A's grant, then B's takeover of the expired lease (generation 2), appear in the
    lease's row while the page stays loaded; the indicator says live."""
    async with (
        chromium() as browser,
        AsyncTenure(served, holder="worker-a") as a,
        AsyncTenure(served, holder="worker-b") as b,
    ):
        page, navigations = await open_marked(browser, f"{served}/ui")
        live = page.locator("#live")
        await page.wait_for_selector('#live[data-state="live"]', timeout=SHOWN_WITHIN_MS)
        assert await live.inner_text() == "live"
        assert await page.locator(ROW).count() == 0

        first = await a.acquire("nightly-close", ttl=1)
        row = page.locator(ROW)
        await row.get_by_text("worker-a").wait_for(timeout=SHOWN_WITHIN_MS)
        assert f"{first.generation}" in await row.locator("td").nth(3).inner_text()

        await asyncio.sleep(1.2)  # A's TTL runs out; B takes the lease over
        second = await b.acquire("nightly-close", ttl=60)
        assert second.generation == first.generation + 1
        await row.get_by_text("worker-b").wait_for(timeout=SHOWN_WITHIN_MS)
        assert await row.get_attribute("data-held") == "true"
        assert await row.locator("td").nth(3).inner_text() == str(second.generation)
        assert "worker-a" not in await row.inner_text()
        await assert_not_reloaded(page, navigations)


async def test_without_the_stream_the_page_refreshes_itself(served: str) -> None:
    """When the stream is refused (as by an older replica, here a 404 for its path), the page
    says so and still picks up a change within its refresh period, without reloading."""
    async with chromium() as browser, AsyncTenure(served, holder="worker-a") as a:
        page = await browser.new_page()
        await page.route("**/v1/events/stream*", lambda route: route.fulfill(status=404))
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        await page.goto(f"{served}/ui")
        await page.evaluate("window.tenureMarker = 'loaded once'")
        await page.wait_for_selector('#live[data-state="off"]', timeout=SHOWN_WITHIN_MS)
        assert "refreshes every" in await page.locator("#live").inner_text()
        await a.acquire("nightly-close", ttl=60)
        refresh = int(await page.evaluate("document.documentElement.dataset.refresh"))
        await page.locator(ROW).get_by_text("worker-a").wait_for(timeout=(refresh + 5) * 1000)
        await assert_not_reloaded(page, navigations)
