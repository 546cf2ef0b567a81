"""Job definitions over HTTP: register, read, list, delete; status and history."""

from __future__ import annotations

from typing import Any

import httpx

from tests.api.test_leases import held, problem, release

DAILY: dict[str, Any] = {
    "schedule": "5 0 * * *",
    "timezone": "America/Sao_Paulo",
    "key": "previous_day",
}
# Fires every minute: its current occurrence is always under a minute old.
MINUTELY: dict[str, Any] = {"schedule": "* * * * *", "timezone": "UTC", "deadline_seconds": 3600}


async def put(api: httpx.AsyncClient, job: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.put(f"/v1/jobs/{job}", json=body)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def events(api: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await api.get(path, params=params)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


async def test_a_registered_job_is_new_until_its_first_occurrence(api: httpx.AsyncClient) -> None:
    """A job registered after today's occurrence is `new`, with its defaults filled in."""
    job = await put(api, "close-day", DAILY)
    assert job["lease"] == "close-day"
    assert job["deadline_seconds"] == 3600
    assert job["max_runtime_seconds"] is None
    assert job["status"]["status"] == "new"
    assert job["status"]["last_completed_window"] is None
    assert job["status"]["next_occurrence"] > job["status"]["occurrence"]
    assert job["status"]["interval_seconds"] == 86400
    assert (await api.get("/v1/jobs/close-day")).json()["schedule"] == "5 0 * * *"


async def test_put_is_idempotent_and_records_each_real_change(api: httpx.AsyncClient) -> None:
    """An identical PUT changes nothing; a changed one is one `updated` event; a new schedule
    moves active_since, a new deadline does not."""
    first = await put(api, "close-day", DAILY)
    again = await put(api, "close-day", DAILY)
    assert again["updated_at"] == first["updated_at"]
    longer = await put(api, "close-day", DAILY | {"deadline_seconds": 7200})
    assert longer["active_since"] == first["active_since"]
    moved = await put(api, "close-day", DAILY | {"schedule": "10 0 * * *"})
    assert moved["active_since"] > first["active_since"]
    page = await events(api, "/v1/jobs/close-day/events")
    assert [item["kind"] for item in page["items"]] == ["updated", "updated", "registered"]


async def test_unknown_and_deleted_jobs_are_not_found(api: httpx.AsyncClient) -> None:
    """GET and DELETE of an unregistered job answer 404 job-not-found; DELETE works once."""
    problem(await api.get("/v1/jobs/nothing"), 404, "job-not-found")
    await put(api, "close-day", DAILY)
    assert (await api.delete("/v1/jobs/close-day")).status_code == 204
    problem(await api.get("/v1/jobs/close-day"), 404, "job-not-found")
    problem(await api.delete("/v1/jobs/close-day"), 404, "job-not-found")
    revived = await put(api, "close-day", DAILY)
    assert revived["status"]["status"] == "new"


async def test_bad_definitions_are_validation_problems(api: httpx.AsyncClient) -> None:
    """A bad cron, zone, key, deadline or label is refused with the field named."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "0 0 30 2 *"}, "schedule"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"key": "week"}, "key"),
        ({"deadline_seconds": 0}, "deadline_seconds"),
        ({"labels": {"Team": "x"}}, "labels"),
    ]
    for change, field in cases:
        body = problem(await api.put("/v1/jobs/j", json=DAILY | change), 422, "validation-error")
        assert body["errors"][0]["field"] == field, (change, body)


async def test_list_pages_through_jobs_in_name_order(api: httpx.AsyncClient) -> None:
    """Jobs come in name order with their status; next_cursor continues the listing."""
    for name in ("c", "a", "b"):
        await put(api, name, DAILY)
    first = (await api.get("/v1/jobs", params={"limit": 2})).json()
    assert [item["name"] for item in first["items"]] == ["a", "b"]
    rest = (await api.get("/v1/jobs", params={"cursor": first["next_cursor"]})).json()
    assert [item["name"] for item in rest["items"]] == ["c"]
    assert rest["next_cursor"] is None
    assert all(item["status"]["status"] == "new" for item in first["items"])


async def test_a_listed_job_shows_its_latest_definition(api: httpx.AsyncClient) -> None:
    """Listed jobs are remembered by their rows' values: a job listed, changed, deleted and
    registered again is listed as it is each time, never as it was."""

    async def listed() -> list[tuple[str, str, dict[str, str]]]:
        items = (await api.get("/v1/jobs", params={"unregistered": "false"})).json()["items"]
        return [(item["name"], item["schedule"], item["labels"]) for item in items]

    await put(api, "j", DAILY)
    assert await listed() == [("j", "5 0 * * *", {})]
    await put(api, "j", {**DAILY, "labels": {"team": "a"}})
    assert await listed() == [("j", "5 0 * * *", {"team": "a"})]
    await put(api, "j", {**DAILY, "schedule": "0 1 * * *", "labels": {"team": "a"}})
    assert await listed() == [("j", "0 1 * * *", {"team": "a"})]
    assert (await api.delete("/v1/jobs/j")).status_code == 204
    assert await listed() == []
    await put(api, "j", DAILY)
    assert await listed() == [("j", "5 0 * * *", {})]


async def test_status_follows_a_run_of_the_current_window(api: httpx.AsyncClient) -> None:
    """Claiming the current window makes the job `running`; completing it makes it `ok`, with
    the last completed window and its duration."""
    job = await put(api, "tick", MINUTELY)
    window = job["status"]["window"]
    lease = await held(api, "tick", "worker-1")
    holding = {"holder": "worker-1", "lease": "tick", "generation": lease["generation"]}
    claimed = await api.post(f"/v1/jobs/tick/windows/{window}/claim", json=holding)
    assert claimed.status_code == 200, claimed.text
    running = (await api.get("/v1/jobs/tick")).json()["status"]
    if running["window"] == window:  # the minute may have turned meanwhile
        assert running["status"] == "running"
        assert running["running_window"] == window
    done = await api.post(f"/v1/jobs/tick/windows/{window}/complete", json=holding)
    assert done.status_code == 200, done.text
    status = (await api.get("/v1/jobs/tick")).json()["status"]
    assert status["last_completed_window"] == window
    assert status["last_duration_seconds"] >= 0
    assert status["duration_over_half_interval"] is False
    if status["window"] == window:
        assert status["status"] == "ok"


async def test_job_history_is_newest_first_and_paginated(api: httpx.AsyncClient) -> None:
    """Registration, claim and completion are events of the job, newest first, by cursor."""
    job = await put(api, "tick", MINUTELY)
    window = job["status"]["window"]
    lease = await held(api, "tick", "w")
    holding = {"holder": "w", "lease": "tick", "generation": lease["generation"]}
    await api.post(f"/v1/jobs/tick/windows/{window}/claim", json=holding)
    await api.post(f"/v1/jobs/tick/windows/{window}/complete", json=holding)
    first = await events(api, "/v1/jobs/tick/events", limit=2)
    assert [item["kind"] for item in first["items"]] == ["completed", "claimed"]
    assert first["items"][1]["window"] == window
    assert first["items"][1]["attempt"] == 1
    rest = await events(api, "/v1/jobs/tick/events", cursor=first["next_cursor"])
    assert [item["kind"] for item in rest["items"]] == ["registered"]
    assert rest["next_cursor"] is None


async def test_lease_history_is_newest_first_and_paginated(api: httpx.AsyncClient) -> None:
    """A lease's transitions come newest first; the cursor pages back in time."""
    lease = await held(api, "report", "a")
    assert (await release(api, lease)).status_code == 200
    await held(api, "report", "b")
    assert lease["generation"] == 1
    first = await events(api, "/v1/leases/report/events", limit=2)
    assert [(item["kind"], item["holder"]) for item in first["items"]] == [
        ("acquired", "b"),
        ("released", "a"),
    ]
    rest = await events(api, "/v1/leases/report/events", cursor=first["next_cursor"])
    assert [item["kind"] for item in rest["items"]] == ["acquired"]
    problem(
        await api.get("/v1/leases/report/events", params={"cursor": "bm9wZQ"}),
        422,
        "validation-error",
    )


async def test_overview_lists_jobs_leases_and_alerts(api: httpx.AsyncClient) -> None:
    """The overview holds each job's status and each lease with its age, held ones first."""
    await put(api, "close-day", DAILY)
    await held(api, "close-day", "host-1:42")
    overview = (await api.get("/v1/overview")).json()
    assert [job["name"] for job in overview["jobs"]] == ["close-day"]
    (lease,) = overview["leases"]
    assert (lease["name"], lease["holder"], lease["held"], lease["stuck"]) == (
        "close-day",
        "host-1:42",
        True,
        False,
    )
    assert lease["held_for_seconds"] >= 0
    assert overview["alerts"] == []
