"""With authentication on, /ui follows the event stream on the credentials the browser already
has for the page (the token as an HTTP Basic password): EventSource sends them as every fetch
of the page does, and the stream keeps to the token's namespaces."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from tenure import AsyncTenure
from tenure_server.server.settings import Settings
from tests.support.tokens import TOKENS, tokens_toml
from tests.ui.browser import chromium
from tests.ui.test_dashboard_live import SHOWN_WITHIN_MS

pytestmark = pytest.mark.slow


@pytest.fixture
def settings(database_url: str) -> Settings:
    """This module's app has authentication on (the tests/auth principals)."""
    return Settings(database_url=database_url, tokens=SecretStr(tokens_toml()))


async def test_the_stream_uses_the_pages_basic_credentials(served: str) -> None:
    """A billing reader's page goes live and shows a billing lease acquired by another
    principal; the ops lease acquired just before it never shows."""
    credentials = {"username": "billing-reader", "password": TOKENS["billing-reader"]}
    async with (
        chromium() as browser,
        AsyncTenure(served, holder="worker-1", token=TOKENS["admin"]) as admin,
    ):
        context = await browser.new_context(http_credentials=credentials)
        page = await context.new_page()
        response = await page.goto(f"{served}/ui")
        assert response is not None
        assert response.status == 200
        await page.wait_for_selector('#live[data-state="live"]', timeout=SHOWN_WITHIN_MS)
        await admin.acquire("ops.rotate", ttl=60)
        await admin.acquire("billing.close", ttl=60)
        row = page.locator('tr[data-lease="billing.close"]')
        await row.get_by_text("worker-1").wait_for(timeout=SHOWN_WITHIN_MS)
        assert await page.locator('tr[data-lease="ops.rotate"]').count() == 0
