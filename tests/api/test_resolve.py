"""POST /v1/windows/resolve: any client computes windows exactly as the Python SDK does, and the
service, not the caller's clock, applies the early tolerance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tenure.schedule import resolve
from tests.api.test_leases import problem


async def test_a_late_run_resolves_to_the_same_window(api: httpx.AsyncClient) -> None:
    """The 00:05 run and a 03:40 run of a daily close both resolve to yesterday's business day."""
    answers = []
    for at in ("2026-09-26T00:05:00-03:00", "2026-09-26T03:40:00-03:00"):
        response = await api.post(
            "/v1/windows/resolve",
            json={
                "cron": "5 0 * * *",
                "timezone": "America/Sao_Paulo",
                "at": at,
                "key": "previous_day",
            },
        )
        assert response.status_code == 200, response.text
        answers.append(response.json() | {"now": None})
    assert answers[0] == answers[1]
    assert answers[0]["window"] == "2026-09-25"
    assert answers[0]["occurrence"] == "2026-09-26T00:05:00-03:00"
    assert answers[0]["next_occurrence"] == "2026-09-27T00:05:00-03:00"


@pytest.mark.parametrize("key", ["occurrence", "date", "previous_day"])
async def test_the_service_agrees_with_the_sdk(api: httpx.AsyncClient, key: str) -> None:
    """One implementation: the endpoint answers what tenure.schedule.resolve computes."""
    at = "2026-11-01T01:45:00-04:00"
    response = await api.post(
        "/v1/windows/resolve",
        json={"cron": "30 1 * * *", "timezone": "America/New_York", "at": at, "key": key},
    )
    expected = resolve("30 1 * * *", "America/New_York", datetime.fromisoformat(at), key)  # type: ignore[arg-type]
    assert response.json()["window"] == expected.window


async def test_without_at_the_database_clock_is_used(api: httpx.AsyncClient) -> None:
    """Omitting `at` resolves against now by the database clock."""
    response = await api.post("/v1/windows/resolve", json={"cron": "* * * * *", "timezone": "UTC"})
    assert response.status_code == 200, response.text
    assert response.json()["occurrence"] < response.json()["next_occurrence"]


@pytest.mark.parametrize(
    ("tolerance", "window"), [(None, "2026-12-05"), (0.5, "2026-12-05"), (2, "2026-12-06")]
)
async def test_an_occurrence_within_the_early_tolerance_is_the_window(
    api: httpx.AsyncClient, tolerance: float | None, window: str
) -> None:
    """A second before midnight, a daily midnight job's window is tomorrow's only when the
    request's early tolerance (default 0) reaches midnight."""
    body: dict[str, object] = {
        "cron": "0 0 * * *",
        "timezone": "UTC",
        "at": "2026-12-05T23:59:59Z",
        "key": "date",
    }
    if tolerance is not None:
        body["early_tolerance_seconds"] = tolerance
    response = await api.post("/v1/windows/resolve", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["window"] == window


async def test_the_answer_carries_the_database_clock(api: httpx.AsyncClient) -> None:
    """`now` is the database's clock when the service answered, even for a given `at`."""
    before = datetime.now(UTC)
    response = await api.post(
        "/v1/windows/resolve",
        json={"cron": "0 0 * * *", "timezone": "UTC", "at": "2020-01-01T00:00:00Z"},
    )
    after = datetime.now(UTC)
    now = datetime.fromisoformat(response.json()["now"])
    # The database runs on this machine: its clock is this one.
    assert before - timedelta(seconds=1) <= now <= after + timedelta(seconds=1)


@pytest.mark.parametrize("tolerance", [-1, 30.5, 3600, "nan"])
async def test_an_early_tolerance_beyond_the_setting_is_refused(
    api: httpx.AsyncClient, tolerance: float | str
) -> None:
    """More than TENURE_MAX_EARLY_TOLERANCE_SECONDS (30 s by default), or less than 0: 422."""
    body = {"cron": "0 0 * * *", "timezone": "UTC", "early_tolerance_seconds": tolerance}
    found = problem(await api.post("/v1/windows/resolve", json=body), 422, "validation-error")
    assert [error["field"] for error in found["errors"]] == ["early_tolerance_seconds"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "61 * * * *", "timezone": "UTC"}, "cron"),
        ({"cron": "garbage", "timezone": "UTC"}, "cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "* * * * *", "timezone": "../../etc/passwd"}, "timezone"),
        ({"cron": "* * * * *", "timezone": "UTC", "at": "2026-01-01T00:00:00"}, "at"),
        ({"cron": "* * * * *", "timezone": "UTC", "key": "weekly"}, "key"),
    ],
)
async def test_bad_schedules_are_validation_problems(
    api: httpx.AsyncClient, body: dict[str, str], field: str
) -> None:
    """Bad cron, unknown zones, naive instants and unknown key formats are 422 naming the field."""
    found = problem(await api.post("/v1/windows/resolve", json=body), 422, "validation-error")
    assert field in [error["field"] for error in found["errors"]]
