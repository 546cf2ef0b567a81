"""Schedule arithmetic: the window key an occurrence gets (always a valid key), the cron
expressions, time zones and instants refused, and the module's import without cronsim."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast
from zoneinfo import ZoneInfo

import pytest

from tenure.schedule import (
    KeyFormat,
    check_cron,
    check_timezone,
    next_occurrence,
    resolve,
    scheduled_occurrence,
    window_key,
    window_occurrence,
)
from tests.unit.test_schedule import WINDOW_KEY, at

# --- window keys -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "window"),
    [
        ("occurrence", "2026-09-25T00:05:00-03:00"),
        ("date", "2026-09-25"),
        ("previous_day", "2026-09-24"),
    ],
)
def test_window_key_formats(key: KeyFormat, window: str) -> None:
    """Each key format renders the occurrence as documented, to the second."""
    occurrence = datetime(2026, 9, 25, 0, 5, 0, 123456, tzinfo=ZoneInfo("America/Sao_Paulo"))
    assert window_key(occurrence, key) == window


@pytest.mark.parametrize("key", ["occurrence", "date", "previous_day"])
@pytest.mark.parametrize(
    ("cron", "tz", "instant"),
    [
        ("5 0 * * *", "America/Sao_Paulo", "2026-09-25T03:40:00-03:00"),
        ("0 * * * *", "America/New_York", "2026-11-01T01:30:00-05:00"),
        ("30 2 * * *", "Europe/Berlin", "2026-03-29T12:00:00+02:00"),
        ("0 0 1 1 *", "UTC", "2030-12-31T23:59:59+00:00"),
        ("30 9 * * 1-5", "Asia/Kolkata", "2026-06-01T10:00:00+05:30"),
        ("0 0 * * *", "Etc/GMT+12", "2018-01-01T00:00:00+00:00"),
    ],
)
def test_every_window_key_is_a_valid_key(cron: str, tz: str, instant: str, key: KeyFormat) -> None:
    """Keys of every format match the service's window-key pattern."""
    assert WINDOW_KEY.fullmatch(resolve(cron, tz, at(instant), key).window)


@pytest.mark.parametrize(
    ("cron", "tz", "window", "key", "occurrence"),
    [
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-25",
            "previous_day",
            "2026-09-26T00:05:00-03:00",
        ),
        ("5 0 * * *", "America/Sao_Paulo", "2026-09-25", "date", "2026-09-25T00:05:00-03:00"),
        ("0 * * * *", "UTC", "2026-12-06", "date", "2026-12-06T00:00:00+00:00"),
        ("30 23 * * *", "UTC", "2026-12-06", "date", "2026-12-06T23:30:00+00:00"),
        # The midnight of a spring-forward gap: the first instant after it.
        ("0 0 * * *", "America/Sao_Paulo", "2018-11-04", "date", "2018-11-04T01:00:00-02:00"),
        # No occurrence that day (Mondays only): the day's start.
        ("0 9 * * 1", "UTC", "2026-12-06", "date", "2026-12-06T00:00:00+00:00"),
        (
            "0 * * * *",
            "UTC",
            "2026-12-06T05:00:00+01:00",
            "occurrence",
            "2026-12-06T05:00:00+01:00",
        ),
        ("0 0 * * *", "UTC", "9999-12-31", "previous_day", "9999-12-31T23:59:59.999999+00:00"),
    ],
)
def test_a_window_key_stands_for_its_first_occurrence(
    cron: str, tz: str, window: str, key: KeyFormat, occurrence: str
) -> None:
    """A date key stands for its date's first occurrence, previous_day's for the next day's,
    an occurrence key for the instant it names."""
    found = window_occurrence(cron, tz, window, key)
    assert found is not None
    assert found.isoformat() == occurrence


@pytest.mark.parametrize(
    ("window", "key"),
    [("w", "date"), ("2026-12-06", "occurrence"), ("2026-12-06T05:00:00", "occurrence")],
)
def test_a_window_of_another_format_stands_for_no_occurrence(window: str, key: KeyFormat) -> None:
    """A key not of the format (or a naive instant) stands for no occurrence: None."""
    assert window_occurrence("0 * * * *", "UTC", window, key) is None


def test_unknown_key_format_is_rejected() -> None:
    """A key format outside the three known ones raises ValueError, not a wrong key."""
    occurrence = datetime(2026, 9, 25, 0, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="key format"):
        window_key(occurrence, cast(KeyFormat, "week"))


# --- validation ------------------------------------------------------------------------------


NAIVE = datetime(2026, 9, 25, 0, 5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: scheduled_occurrence("5 0 * * *", "UTC", NAIVE),
        lambda: next_occurrence("5 0 * * *", "UTC", NAIVE),
        lambda: resolve("5 0 * * *", "UTC", NAIVE),
        lambda: window_key(NAIVE),
    ],
    ids=["scheduled_occurrence", "next_occurrence", "resolve", "window_key"],
)
def test_naive_datetime_is_rejected(call: Callable[[], object]) -> None:
    """A datetime without a zone is ambiguous, so every function refuses it."""
    with pytest.raises(ValueError, match="timezone-aware"):
        call()


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "   ",
        "* * * *",
        "0 * * * * *",
        "61 * * * *",
        "0 24 * * *",
        "0 0 32 * *",
        "0 0 31 2 *",
        "0 0 * * MON#6",
        "five past midnight",
        "@daily",
        "*/0 * * * *",
        "5-1 * * * *",
        "0 0 * * *" + " " * 200,
        "0,1" * 70 + " * * * *",
    ],
)
def test_bad_cron_expression_is_rejected(expr: str) -> None:
    """Empty, over-long, wrongly-shaped or unparsable cron expressions raise ValueError."""
    with pytest.raises(ValueError, match="cron expression"):
        check_cron(expr)
    with pytest.raises(ValueError, match="cron expression"):
        resolve(expr, "UTC", datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "expr",
    ["5 0 * * *", "*/15 * * * *", "0 9 * * MON-FRI", "0 0 L * *", "0 0 * * 5L", "0 0 1 JAN *"],
)
def test_good_cron_expression_is_accepted(expr: str) -> None:
    """Five-field expressions cronsim understands pass unchanged."""
    assert check_cron(expr) == expr


@pytest.mark.parametrize(
    "name",
    [
        "",
        "../etc",
        "../../etc/passwd",
        "/etc/passwd",
        "America",
        "America/",
        "Mars/Olympus_Mons",
        "Europe/Berlin\x00",
        "Europe/Berlin ",
        "localtime",
        "posixrules",
        "posix/UTC",
        "right/UTC",
        "zone.tab",
        "A" * 65,
        "Ünïcode/Zone",
    ],
)
def test_bad_time_zone_is_rejected(name: str) -> None:
    """Unknown, path-like or over-long zone names raise ValueError and nothing else."""
    with pytest.raises(ValueError, match="time zone"):
        check_timezone(name)
    with pytest.raises(ValueError, match="time zone"):
        resolve("5 0 * * *", name, datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    "name",
    ["UTC", "America/Sao_Paulo", "Europe/Berlin", "Etc/GMT+3", "America/Argentina/Buenos_Aires"],
)
def test_good_time_zone_is_accepted(name: str) -> None:
    """IANA zone names zoneinfo knows pass unchanged."""
    assert check_timezone(name) == name


# --- packaging -------------------------------------------------------------------------------


def test_module_imports_without_cronsim() -> None:
    """The client imports the schedule module with cronsim missing; cronsim loads on first use."""
    script = (
        "import sys; sys.modules['cronsim'] = None; "
        "import tenure, tenure.schedule; "
        "assert 'cronsim' not in sys.modules or sys.modules['cronsim'] is None"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
