"""What an overview reads is bounded by settings (TENURE_OVERVIEW_*), each taken as given: jobs,
unregistered jobs, held leases and notable events beyond them are left out, never an error."""

from __future__ import annotations

import httpx
import pytest

from tenure_server.app import status
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_interrupted_and_unregistered import claim
from tests.api.test_jobs import MINUTELY, put
from tests.api.test_leases import held
from tests.support.lifespan import running


async def test_the_overview_lists_at_most_what_its_settings_allow(database_url: str) -> None:
    """Three of each, limits of two (one for events): the overview lists the first jobs in name
    order, the longest-held leases, the latest notable events and unregistered jobs up to each
    limit."""
    settings = Settings(
        database_url=database_url,
        pool_min_size=1,
        pool_max_size=10,
        overview_jobs=2,
        overview_leases=2,
        overview_events=1,
        overview_unregistered=2,
    )
    async with running(create_app(settings)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as api:
            for job in ("job-a", "job-b", "job-c"):
                await put(api, job, MINUTELY)
            for name in ("lease-a", "lease-b", "lease-c"):
                await held(api, name, "holder")
            for job in ("ran-a", "ran-b", "ran-c"):
                lease = await held(api, f"run-{job}", "runner")
                await claim(api, lease, f"/v1/jobs/{job}/windows/2026-09-25")
            for name in ("lease-a", "lease-b"):
                forced = await api.post(f"/v1/leases/{name}/force-release")
                assert forced.status_code == 200, forced.text
            overview = (await api.get("/v1/overview")).json()
            page = await api.get("/ui")
    assert [job["name"] for job in overview["jobs"]] == ["job-a", "job-b"]
    assert len(overview["leases"]) == 2
    assert len(overview["events"]) == 1
    assert [job["name"] for job in overview["unregistered_jobs"]] == ["ran-a", "ran-b"]
    assert page.status_code == 200
    assert "job-c" not in page.text


async def test_jobs_read_a_page_at_a_time_are_listed_in_name_order_up_to_the_limit(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two jobs, evaluated while the next page is read: the overview lists the first
    five of seven jobs, in name order, each with its own status, as one read would."""
    monkeypatch.setattr(status, "JOB_PAGE", 2)
    settings = Settings(database_url=database_url, pool_min_size=1, overview_jobs=5)
    async with running(create_app(settings)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as api:
            names = [f"job-{letter}" for letter in "gfedcba"]
            for job in names:
                await put(api, job, MINUTELY)
            lease = await held(api, "run-job-c", "runner")
            await claim(api, lease, "/v1/jobs/job-c/windows/2026-09-25")
            overview = (await api.get("/v1/overview")).json()
    listed = overview["jobs"]
    assert [job["name"] for job in listed] == sorted(names)[:5]
    claimed = [job["name"] for job in listed if job["status"]["running_window"] == "2026-09-25"]
    assert claimed == ["job-c"]
