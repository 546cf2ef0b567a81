"""/docs and /redoc in a real browser with every request off the service's own origin refused,
as in an air-gapped cluster: the pages must render from the assets the service serves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.ui.browser import ARTIFACTS, chromium

pytestmark = pytest.mark.slow


async def offline_page(browser: Any, served: str, refused: list[str]) -> Any:
    """A page whose requests to any other origin are aborted (and noted in `refused`)."""
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    origin = urlsplit(served).netloc

    async def only_the_service(route: Any) -> None:
        if urlsplit(route.request.url).netloc == origin:
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort()

    await page.route("**/*", only_the_service)
    return page


async def test_swagger_ui_renders_the_operations_without_network(served: str) -> None:
    """/docs shows Swagger UI with the API's operations, and no request leaves the service."""
    refused: list[str] = []
    async with chromium() as browser:
        page = await offline_page(browser, served, refused)
        response = await page.goto(f"{served}/docs")
        assert response is not None
        assert response.status == 200
        await page.wait_for_selector(".opblock", timeout=15_000)
        paths = await page.locator(".opblock-summary-path").all_inner_texts()
        assert "/v1/leases/{name}/acquire" in [path.replace("\u200b", "") for path in paths]
        assert "Tenure" in await page.locator(".information-container .title").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "docs-offline.png"))
    assert refused == []


async def test_redoc_renders_without_network(served: str) -> None:
    """/redoc shows ReDoc's menu and the API's operations, and no request leaves the service."""
    refused: list[str] = []
    async with chromium() as browser:
        page = await offline_page(browser, served, refused)
        response = await page.goto(f"{served}/redoc")
        assert response is not None
        assert response.status == 200
        await page.wait_for_selector("[role=menuitem]", timeout=15_000)
        assert "leases" in (await page.locator(".menu-content").inner_text()).lower()
        operations = await page.locator("h2").all_inner_texts()
        assert any("acquire" in title.lower() for title in operations), operations
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "redoc-offline.png"))
    assert refused == []
