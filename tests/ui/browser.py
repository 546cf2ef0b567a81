"""What the browser tests share: headless Chromium (Debian's `chromium`) driven by Playwright.
Importing this module skips the importing test module when either is missing."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

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


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless Chromium (a Playwright `Browser`), closed on exit."""
    async with playwright_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()
