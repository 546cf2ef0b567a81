"""A registered job's window is claimed only once its occurrence is due by the database clock (less
TENURE_MAX_EARLY_TOLERANCE_SECONDS): a caller whose clock runs ahead cannot close a day early,
and every window the service resolves is claimable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tenure.schedule import KeyFormat, next_occurrence, resolve, window_key
from tenure_server.server.settings import Settings
from tests.api.test_jobs import put
from tests.api.test_leases import held, problem
from tests.api.test_windows import holding

# Larger than the default, so that a minutely schedule's next occurrence is always within it.
TOLERANCE = 90.0


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        pool_min_size=1,
        pool_max_size=20,
        max_early_tolerance_seconds=TOLERANCE,
    )


def job(cron: str, key: KeyFormat) -> dict[str, Any]:
    return {"schedule": cron, "timezone": "UTC", "key": key, "lease": "close-day"}


async def claim(api: httpx.AsyncClient, window: str, generation: int = 1) -> httpx.Response:
    return await api.post(
        f"/v1/jobs/close-day/windows/{window}/claim", json=holding("a", generation)
    )


@pytest.mark.parametrize("key", ["date", "previous_day", "occurrence"])
async def test_a_raw_claim_of_tomorrows_window_of_a_registered_job_is_refused(
    api: httpx.AsyncClient, key: KeyFormat
) -> None:
    """The next window of a daily job, 11 to 12 hours ahead, is 409 `window-not-due`, naming
    its occurrence and the database clock; nothing is written, and the current window is
    claimed by the same holding."""
    now = datetime.now(UTC)
    cron = f"0 {(now.hour + 12) % 24} * * *"
    await put(api, "close-day", job(cron, key))
    await held(api, "close-day", "a")
    following = next_occurrence(cron, "UTC", now)
    refused = problem(await claim(api, window_key(following, key)), 409, "window-not-due")
    assert datetime.fromisoformat(refused["occurrence"]) == following
    assert datetime.fromisoformat(refused["now"]) < following - timedelta(hours=11)
    assert (
        await api.get(f"/v1/jobs/close-day/windows/{window_key(following, key)}")
    ).status_code == 404
    assert (await claim(api, resolve(cron, "UTC", now, key).window)).status_code == 200


async def test_a_window_the_service_resolves_is_always_claimable(api: httpx.AsyncClient) -> None:
    """Resolved with the largest early tolerance, a minutely job's window is its next occurrence,
    still ahead of the clock, and it is claimed; the one after it is not."""
    await put(api, "close-day", job("* * * * *", "occurrence"))
    await held(api, "close-day", "a")
    body = {"cron": "* * * * *", "timezone": "UTC", "early_tolerance_seconds": TOLERANCE}
    resolved = (await api.post("/v1/windows/resolve", json=body)).json()
    assert datetime.fromisoformat(resolved["occurrence"]) > datetime.fromisoformat(resolved["now"])
    assert (await claim(api, resolved["window"])).status_code == 200
    following = datetime.fromisoformat(resolved["next_occurrence"])
    refused = await claim(api, window_key(next_occurrence("* * * * *", "UTC", following)))
    problem(refused, 409, "window-not-due")


@pytest.mark.parametrize("window", ["2999-01-01", "someday"])
async def test_windows_of_unregistered_jobs_and_other_keys_are_not_judged(
    api: httpx.AsyncClient, window: str
) -> None:
    """Without a registered job, or with a key not of the job's format, the service knows no
    occurrence to wait for: the claim goes through."""
    await held(api, "close-day", "a")
    assert (await claim(api, window)).status_code == 200
    await put(api, "close-day", job("0 0 * * *", "occurrence"))
    assert (await claim(api, window)).status_code == 200


async def test_a_completed_window_is_reported_before_a_window_not_due(
    api: httpx.AsyncClient,
) -> None:
    """A window completed before its job was registered stays `window-completed`: that is
    permanent, and tells a late run to skip."""
    await held(api, "close-day", "a")
    assert (await claim(api, "2999-01-01")).status_code == 200
    done = await api.post("/v1/jobs/close-day/windows/2999-01-01/complete", json=holding("a", 1))
    assert done.status_code == 200, done.text
    await put(api, "close-day", job("0 0 * * *", "date"))
    problem(await claim(api, "2999-01-01"), 409, "window-completed")
