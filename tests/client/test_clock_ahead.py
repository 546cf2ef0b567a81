"""A host whose clock is off cannot move a window: the service resolves it, early tolerance
included, by the database's clock — for the SDK, `@once_per` and `tenure run --cron` alike — and
the client says once that the clock is off. A window named by a clock that runs ahead is refused
by the service, and `run_once` skips it."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tenure import JobSpec, RunContext, Tenure, WindowNotDue, once_per, resolve_window, run_once
from tenure._client import clock_skew
from tests.client.run_commands import WORKER, recent_daily_schedule
from tests.support.processes import TENURE, Processes

PYTHON = sys.executable
FAKETIME = shutil.which("faketime")
needs_faketime = pytest.mark.skipif(FAKETIME is None, reason="faketime (libfaketime) not installed")
# What the client's warning about this host's clock starts with.
CLOCK_OFF = "this host's clock is"
# The command `tenure run` runs in these tests: writes its window to the file named.
WRITE_WINDOW = "import os, sys; open(sys.argv[1], 'w').write(os.environ['TENURE_WINDOW'])"

# A schedule, its key format, and its current window by the database's (the real) clock.
Schedule = tuple[str, str, str]


def faked(offset: str, *command: str) -> list[str]:
    """`command` on a host whose wall clock is `offset` off (faketime's `+1d`, `-5m`); its
    monotonic clock, which times leases, is left alone."""
    assert FAKETIME is not None
    return ["env", "FAKETIME_DONT_FAKE_MONOTONIC=1", FAKETIME, "-f", offset, *command]


def daily() -> Schedule:
    """A daily job that fired minutes ago: a clock a day ahead is past its next occurrence."""
    cron, today, _ = recent_daily_schedule()
    return cron, "date", today


def hourly_due_within_ten_minutes() -> Schedule:
    """An hourly job whose next occurrence is 4 to 5 minutes away: a clock 10 minutes ahead is
    past it."""
    now = datetime.now(UTC)
    cron = f"{(now + timedelta(minutes=5)).minute} * * * *"
    return cron, "occurrence", resolve_window(cron, "UTC", "occurrence", now=now)


@needs_faketime
@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("offset", "schedule"),
    [("+1d", daily), ("+10m", hourly_due_within_ten_minutes), ("-5m", daily)],
    ids=["a day ahead", "ten minutes ahead", "five minutes behind"],
)
def test_a_host_clock_off_runs_the_services_current_window(
    service_url: str,
    processes: Processes,
    tmp_path: Path,
    offset: str,
    schedule: Callable[[], Schedule],
) -> None:
    """Under faketime, `client.resolve_window`, `@once_per` (sync and async) and `tenure run
    --cron` all run the service's current window, never the one the host's clock is in; each
    client warns once that the clock is off."""
    cron, key, current = schedule()
    out = tmp_path / "window"
    sdk = processes.start(
        *faked(offset, PYTHON, str(WORKER), "schedule", service_url, cron, key, "sdk")
    )
    run = processes.start(*faked(
        offset, str(TENURE), "run", "cli", "--cron", cron, "--tz", "UTC", "--key", key,
        "--url", service_url, "--", PYTHON, "-c", WRITE_WINDOW, str(out),
    ))  # fmt: skip
    answer, err = sdk.communicate(timeout=90)
    assert sdk.returncode == 0, err
    ran = {"ran": True, "skipped": None, "window": current}
    assert json.loads(answer) == {"resolved": current, "once_per": ran, "async_once_per": ran}
    assert err.count(CLOCK_OFF) == 2, err  # one per client: the Tenure and the AsyncTenure
    _, err = run.communicate(timeout=90)
    assert run.returncode == 0, err
    assert out.read_text() == current
    assert err.count(CLOCK_OFF) == 1, err


def test_the_host_clock_given_decides_nothing(client: Tenure) -> None:
    """`resolve_window(..., clock=<tomorrow 00:00>)` answers today, by the service's clock, and
    says that `clock` is deprecated; so does `once_per(clock=...)`."""
    now = datetime.now(UTC)
    today = resolve_window("0 0 * * *", "UTC", "date", now=now)
    tomorrow = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    with pytest.warns(DeprecationWarning, match="clock"):
        window = client.resolve_window("0 0 * * *", "UTC", "date", clock=lambda: tomorrow)
    assert window in {today, resolve_window("0 0 * * *", "UTC", "date")}  # midnight passing
    with pytest.warns(DeprecationWarning, match="clock"):
        once_per("job", cron="0 0 * * *", tz="UTC", client=client, clock=lambda: tomorrow)


def test_run_once_skips_a_window_not_due(client: Tenure, caplog: pytest.LogCaptureFixture) -> None:
    """A registered daily job's window a day ahead is refused by the service (WindowNotDue);
    run_once skips it as `not_due` with a warning, without calling fn, and releases the lease."""
    client.put_job("close-day", JobSpec(schedule="0 0 * * *", timezone="UTC", key="date"))
    ahead = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    with client.lease("close-day", 30) as lease, pytest.raises(WindowNotDue) as refused:
        client.claim_window("close-day", ahead, lease)
    assert refused.value.occurrence > refused.value.now + timedelta(days=1)
    calls: list[RunContext] = []
    with caplog.at_level(logging.WARNING, logger="tenure"):
        result = run_once(client, "close-day", ahead, calls.append)
    assert (result.ran, result.skipped, calls) == (False, "not_due", [])
    assert any("not_due" in record.getMessage() for record in caplog.records)
    assert not client.get_lease("close-day").held


def test_tenure_run_refuses_a_window_not_due(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """`tenure run --window` with a registered job's window a day ahead: the service refuses
    it, nothing runs, exit 2 with the service's reason."""
    client.put_job("close-day", JobSpec(schedule="0 0 * * *", timezone="UTC", key="date"))
    ahead = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    out = tmp_path / "window"
    run = processes.tenure(
        "run", "close-day", "--window", ahead, "--url", service_url,
        "--", PYTHON, "-c", WRITE_WINDOW, str(out),
    )  # fmt: skip
    _, err = run.communicate(timeout=30)
    assert run.returncode == 2, err
    assert "is not due" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("service_now", "tolerance", "skew"),
    [(0.5, 0, 0.0), (-1.5, 2, 0.0), (2.5, 2, 0.0), (-600, 2, 600.0), (301, 2, -300.0)],
)
def test_clock_skew_counts_only_what_the_request_time_cannot_explain(
    service_now: float, tolerance: float, skew: float
) -> None:
    """The service read its clock while this host's went from 0 to 1 s: a difference within
    that interval (widened by the tolerance) is none; beyond it, the difference from its edge."""
    sent = datetime(2026, 12, 5, tzinfo=UTC)
    at = sent + timedelta(seconds=service_now)
    assert clock_skew(sent, sent + timedelta(seconds=1), at, tolerance) == pytest.approx(skew)


def _service_behind(seconds: float) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        now = datetime.now(UTC) - timedelta(seconds=seconds)
        body = {
            "occurrence": "2026-12-05T00:00:00Z",
            "window": "2026-12-05",
            "next_occurrence": "2026-12-06T00:00:00Z",
            "now": now.isoformat(),
        }
        return httpx.Response(200, json=body)

    return httpx.MockTransport(answer)


@pytest.mark.parametrize(("behind", "warnings"), [(600, 1), (0, 0)])
def test_a_client_warns_once_when_this_hosts_clock_is_off(
    caplog: pytest.LogCaptureFixture, behind: float, warnings: int
) -> None:
    """A service clock 10 minutes behind this host's: two resolves, one warning saying the host
    is ahead; a service clock that agrees: none. The window is the service's either way."""
    with (
        Tenure("http://tenure.test", transport=_service_behind(behind)) as client,
        caplog.at_level(logging.WARNING, logger="tenure"),
    ):
        for _ in range(2):
            assert client.resolve_window("0 0 * * *", "UTC", "date") == "2026-12-05"
    said = [record.getMessage() for record in caplog.records if CLOCK_OFF in record.getMessage()]
    assert len(said) == warnings
    assert all("ahead of" in message for message in said)
