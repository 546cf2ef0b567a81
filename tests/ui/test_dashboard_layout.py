"""GET /ui at common screen widths (headless Chromium through Playwright): with several jobs of
long names, late and missed, the jobs table fits inside its card, so a late job's current window
and deadline are on screen, not scrolled out of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest

from tests.ui.browser import ARTIFACTS, chromium

pytestmark = pytest.mark.slow

LONG_NAMES = (
    "reconcile-settlements-for-every-european-marketplace-store",
    "nightlyreconciliationofallpaymentprovidersandtheirledgers",
    "export.finance.quarterly-close.accounts-receivable-ageing-report",
    "send-invoices-to-customers-with-overdue-balances",
    "refresh-the-currency-exchange-rate-cache",
)
# What the page's card and the table's own box are, as the browser laid them out.
MEASURE = """() => {
  const card = document.querySelector('#jobs');
  const scroll = card.querySelector('.scroll');
  const cells = [...card.querySelectorAll('tr[data-job] td:last-child')];
  return {
    card: card.getBoundingClientRect().right,
    table: card.querySelector('table').getBoundingClientRect().right,
    scrollWidth: scroll.scrollWidth,
    clientWidth: scroll.clientWidth,
    lastCells: cells.map((cell) => cell.getBoundingClientRect().right),
  };
}"""


async def seed_long_names(api: httpx.AsyncClient, database_url: str) -> None:
    """Jobs with long names in a long time zone, due an hour ago with a one-minute deadline
    (missed), one of them running (its current window claimed)."""
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    for name in LONG_NAMES:
        body = {
            "schedule": f"{hour_ago.minute} {hour_ago.hour} * * *",
            "timezone": "America/Argentina/ComodRivadavia",
            "key": "date",
            "deadline_seconds": 60,
        }
        assert (await api.put(f"/v1/jobs/{name}", json=body)).status_code == 200, name
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("UPDATE jobs SET active_since = now() - interval '2 days'")
    finally:
        await connection.close()
    running = LONG_NAMES[-1]
    window = (await api.get(f"/v1/jobs/{running}")).json()["status"]["window"]
    lease = await api.post(
        f"/v1/leases/{running}/acquire",
        json={"holder": "worker-with-a-rather-long-host-name-7f9c2d", "ttl_seconds": 300},
    )
    holding = {
        "holder": "worker-with-a-rather-long-host-name-7f9c2d",
        "lease": running,
        "generation": lease.json()["generation"],
    }
    claimed = await api.post(f"/v1/jobs/{running}/windows/{window}/claim", json=holding)
    assert claimed.status_code == 200, claimed.text


@pytest.mark.parametrize("width", [1280, 1920])
async def test_the_jobs_table_fits_its_card(
    api: httpx.AsyncClient, database_url: str, served: str, width: int
) -> None:
    """At `width` px the jobs table ends inside its card and needs no scrolling; every job's
    current window (the last column) is inside the card."""
    await seed_long_names(api, database_url)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": width, "height": 900})
        response = await page.goto(f"{served}/ui")
        assert response is not None
        assert response.status == 200
        assert await page.locator("tr[data-job]").count() == len(LONG_NAMES)
        box = await page.evaluate(MEASURE)
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / f"dashboard-{width}.png"), full_page=True)
    assert box["table"] <= box["card"], box
    assert box["scrollWidth"] <= box["clientWidth"], box
    assert all(right <= box["card"] for right in box["lastCells"]), box
