"""POST /v1/windows/resolve: any client computes windows exactly as the Python SDK does."""

from __future__ import annotations

from datetime import datetime

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
        answers.append(response.json())
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
