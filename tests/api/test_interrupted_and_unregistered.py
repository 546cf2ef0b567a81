"""A run that died leaves its window `interrupted`, not `running` forever; jobs that ran without
being registered are listed, marked unregistered (issue 26)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.test_jobs import MINUTELY, put
from tests.api.test_leases import every_page, held, release
from tests.api.test_metrics import expire, scrape, value
from tests.api.test_windows import holding

WINDOW = "/v1/jobs/close-day/windows/2026-09-25"


async def state(api: httpx.AsyncClient, path: str = WINDOW) -> tuple[str, str]:
    response = await api.get(path)
    assert response.status_code == 200, response.text
    return response.json()["status"], response.json()["state"]


async def claim(api: httpx.AsyncClient, lease: dict[str, Any], path: str = WINDOW) -> None:
    body = holding(lease["holder"], lease["generation"], lease["name"])
    claimed = await api.post(f"{path}/claim", json=body)
    assert claimed.status_code == 200, claimed.text


async def test_a_window_whose_run_released_its_lease_is_interrupted_until_resumed(
    api: httpx.AsyncClient,
) -> None:
    """Released without completing: interrupted (status stays running for older SDKs), also
    while a newer generation holds the lease; a new claim makes it running, completion
    completed."""
    first = await held(api, "close-day", "a")
    await claim(api, first)
    assert await state(api) == ("running", "running")
    assert (await release(api, first)).status_code == 200
    assert await state(api) == ("running", "interrupted")
    second = await held(api, "close-day", "b")
    assert await state(api) == ("running", "interrupted")
    listed = (await api.get("/v1/jobs/close-day/windows")).json()["items"]
    assert [item["state"] for item in listed] == ["interrupted"]
    await claim(api, second)
    assert await state(api) == ("running", "running")
    done = await api.post(f"{WINDOW}/complete", json=holding("b", second["generation"]))
    assert (done.json()["status"], done.json()["state"]) == ("completed", "completed")
    assert await state(api) == ("completed", "completed")


async def test_an_expired_run_shows_as_interrupted_in_the_job_status_and_metrics(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """A lease that lapsed under a registered job's running window: the job's status names the
    interrupted window, tenure_job_interrupted is 1 for it, and /ui marks the job."""
    await put(api, "close-day", MINUTELY)
    lease = await held(api, "close-day", "a")
    await claim(api, lease)
    job = (await api.get("/v1/jobs/close-day")).json()
    assert job["status"]["interrupted_window"] is None
    assert job["registered"] is True
    await expire(database_url, "close-day")
    job = (await api.get("/v1/jobs/close-day")).json()
    assert job["status"]["interrupted_window"] == "2026-09-25"
    overview = (await api.get("/v1/overview")).json()
    assert overview["jobs"][0]["status"]["interrupted_window"] == "2026-09-25"
    assert value(await scrape(api), "tenure_job_interrupted", job="close-day") == 1
    page = (await api.get("/ui")).text
    assert 'class="pill interrupted"' in page


async def test_jobs_that_ran_unregistered_are_listed_without_a_status(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Jobs with windows but no registration (never, or deleted) come with their latest windows
    in the overview and in GET /v1/jobs, merged in name order, page by page."""
    await put(api, "b-registered", MINUTELY)
    await put(api, "d-deleted", MINUTELY)
    lease = await held(api, "work", "w")
    for job in ("a-adhoc", "c-adhoc", "d-deleted", "e-adhoc"):
        await claim(api, lease, f"/v1/jobs/{job}/windows/k1")
    done = await api.post("/v1/jobs/c-adhoc/windows/k1/complete", json=holding("w", 1, "work"))
    assert done.status_code == 200, done.text
    assert (await api.delete("/v1/jobs/d-deleted")).status_code == 204
    await expire(database_url, "work")

    registered = (await api.get("/v1/jobs", params={"unregistered": "false"})).json()
    assert [item["name"] for item in registered["items"]] == ["b-registered"]
    everything = (await api.get("/v1/jobs")).json()
    names = ["a-adhoc", "b-registered", "c-adhoc", "d-deleted", "e-adhoc"]
    assert [item["name"] for item in everything["items"]] == names
    assert [item["registered"] for item in everything["items"]] == [
        False, True, False, False, False
    ]  # fmt: skip
    adhoc = everything["items"][0]
    assert not {"status", "schedule"} & set(adhoc)
    assert adhoc["last_started"]["state"] == "interrupted"
    assert adhoc["interrupted_window"] == "k1"
    assert everything["items"][2]["last_completed"]["window"] == "k1"

    assert await every_page(api, "/v1/jobs", {"unregistered": "true", "limit": 2}) == names
    under = (await api.get("/v1/jobs", params={"unregistered": "true", "prefix": "c-"})).json()
    assert [item["name"] for item in under["items"]] == ["c-adhoc"]

    overview = (await api.get("/v1/overview")).json()
    assert [job["name"] for job in overview["jobs"]] == ["b-registered"]
    listed = [job["name"] for job in overview["unregistered_jobs"]]
    assert listed == ["a-adhoc", "c-adhoc", "d-deleted", "e-adhoc"]
    samples = await scrape(api)
    assert value(samples, "tenure_job_interrupted", job="a-adhoc") == 1
    assert value(samples, "tenure_job_interrupted", job="c-adhoc") == 0
    page = (await api.get("/ui")).text
    assert 'data-job="a-adhoc" data-status="unregistered"' in page
    assert "cannot tell when a run is late or missed" in page
