"""Schedule arithmetic: which occurrence an instant belongs to, and so which window (a late run
and the run it stands for share one), across zones, exact boundaries and daylight-saving days.
The window key an occurrence gets, and what is refused: test_schedule_keys.py."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from tenure.schedule import (
    KeyFormat,
    next_occurrence,
    resolve,
    scheduled_occurrence,
)

# What the service accepts as a window key.
WINDOW_KEY = re.compile(r"^[A-Za-z0-9._:+-]{1,100}$")


def at(text: str) -> datetime:
    """An aware instant from ISO 8601 with its offset."""
    moment = datetime.fromisoformat(text)
    assert moment.tzinfo is not None
    return moment


def occurrences_on(cron: str, tz: str, day: date) -> list[str]:
    """Every occurrence whose local date is `day`, as ISO 8601 with offset."""
    midnight = datetime.combine(day, time(), ZoneInfo(tz))
    found: list[str] = []
    occurrence = scheduled_occurrence(cron, tz, midnight - timedelta(hours=3))
    # Bounded, so that a next_occurrence which stops advancing fails the test instead of hanging.
    for _ in range(60):
        occurrence = next_occurrence(cron, tz, occurrence)
        if occurrence.date() > day:
            return found
        if occurrence.date() == day:
            found.append(occurrence.isoformat())
    raise AssertionError(f"{cron!r} in {tz} does not get past {day}")


# --- a run and a late run share a window ------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "tz", "instant", "key", "window"),
    [
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-25T00:05:00-03:00",
            "previous_day",
            "2026-09-24",
        ),
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-25T03:40:00-03:00",
            "previous_day",
            "2026-09-24",
        ),
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-26T00:04:59-03:00",
            "previous_day",
            "2026-09-24",
        ),
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-25T06:40:00+00:00",
            "previous_day",
            "2026-09-24",
        ),
        ("5 0 * * *", "America/Sao_Paulo", "2026-09-25T03:40:00-03:00", "date", "2026-09-25"),
        (
            "5 0 * * *",
            "America/Sao_Paulo",
            "2026-09-25T03:40:00-03:00",
            "occurrence",
            "2026-09-25T00:05:00-03:00",
        ),
        (
            "0 * * * *",
            "Europe/Berlin",
            "2026-06-01T10:59:59+02:00",
            "occurrence",
            "2026-06-01T10:00:00+02:00",
        ),
        (
            "*/15 * * * *",
            "UTC",
            "2026-06-01T10:44:00+00:00",
            "occurrence",
            "2026-06-01T10:30:00+00:00",
        ),
    ],
)
def test_late_run_gets_the_window_of_the_occurrence_it_was_meant_for(
    cron: str, tz: str, instant: str, key: KeyFormat, window: str
) -> None:
    """Any instant before the next occurrence resolves to the latest occurrence before it."""
    assert resolve(cron, tz, at(instant), key).window == window


def test_run_after_the_next_occurrence_gets_the_next_window() -> None:
    """Once the next occurrence has passed, an instant resolves to it, not to the previous one."""
    first = resolve(
        "5 0 * * *", "America/Sao_Paulo", at("2026-09-25T03:40:00-03:00"), "previous_day"
    )
    later = resolve(
        "5 0 * * *", "America/Sao_Paulo", at("2026-09-26T00:06:00-03:00"), "previous_day"
    )
    assert (first.window, later.window) == ("2026-09-24", "2026-09-25")
    assert later.occurrence.isoformat() == "2026-09-26T00:05:00-03:00"


def test_occurrence_is_in_the_schedule_zone() -> None:
    """The occurrence carries the schedule's zone whatever zone `now` was given in."""
    occurrence = scheduled_occurrence("5 0 * * *", "Europe/Berlin", at("2026-06-01T12:00:00+00:00"))
    assert occurrence.tzinfo == ZoneInfo("Europe/Berlin")
    assert occurrence.isoformat() == "2026-06-01T00:05:00+02:00"


# --- exact boundaries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instant", "occurrence", "following"),
    [
        ("2026-09-25T00:05:00-03:00", "2026-09-25T00:05:00-03:00", "2026-09-26T00:05:00-03:00"),
        (
            "2026-09-25T00:04:59.999999-03:00",
            "2026-09-24T00:05:00-03:00",
            "2026-09-25T00:05:00-03:00",
        ),
        (
            "2026-09-25T00:05:00.000001-03:00",
            "2026-09-25T00:05:00-03:00",
            "2026-09-26T00:05:00-03:00",
        ),
        (
            "2026-09-25T00:05:59.999999-03:00",
            "2026-09-25T00:05:00-03:00",
            "2026-09-26T00:05:00-03:00",
        ),
    ],
)
def test_occurrence_exactly_at_now_counts_and_next_is_strictly_after(
    instant: str, occurrence: str, following: str
) -> None:
    """An occurrence equal to `now` is the current one; the next one is strictly later."""
    now = at(instant)
    assert scheduled_occurrence("5 0 * * *", "America/Sao_Paulo", now).isoformat() == occurrence
    assert next_occurrence("5 0 * * *", "America/Sao_Paulo", now).isoformat() == following


# --- daylight-saving days --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cron", "tz", "day", "expected"),
    [
        # Spring forward: a time in the gap fires once, at the end of the gap.
        ("30 2 * * *", "America/New_York", date(2026, 3, 8), ["2026-03-08T03:00:00-04:00"]),
        ("30 2 * * *", "Europe/Berlin", date(2026, 3, 29), ["2026-03-29T03:00:00+02:00"]),
        ("0 0 * * *", "America/Sao_Paulo", date(2018, 11, 4), ["2018-11-04T01:00:00-02:00"]),
        ("5 0 * * *", "America/Sao_Paulo", date(2018, 11, 4), ["2018-11-04T01:00:00-02:00"]),
        # Fall back: a time in the repeated hour fires once, on its first pass.
        ("30 1 * * *", "America/New_York", date(2026, 11, 1), ["2026-11-01T01:30:00-04:00"]),
        ("30 2 * * *", "Europe/Berlin", date(2026, 10, 25), ["2026-10-25T02:30:00+02:00"]),
        ("30 23 * * *", "America/Sao_Paulo", date(2018, 2, 17), ["2018-02-17T23:30:00-02:00"]),
        ("0 0 * * *", "America/Sao_Paulo", date(2018, 2, 18), ["2018-02-18T00:00:00-03:00"]),
        # Times outside the gap or overlap are untouched on those days.
        ("5 0 * * *", "America/New_York", date(2026, 11, 1), ["2026-11-01T00:05:00-04:00"]),
        ("0 12 * * *", "Europe/Berlin", date(2026, 3, 29), ["2026-03-29T12:00:00+02:00"]),
    ],
)
def test_daily_schedule_fires_once_on_a_daylight_saving_day(
    cron: str, tz: str, day: date, expected: list[str]
) -> None:
    """A daily schedule at a time in a DST gap or overlap has exactly one occurrence that day."""
    assert occurrences_on(cron, tz, day) == expected


@pytest.mark.parametrize(
    ("tz", "day", "count", "around_change"),
    [
        (
            "America/New_York",
            date(2026, 3, 8),
            23,
            ["2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"],
        ),
        (
            "America/New_York",
            date(2026, 11, 1),
            25,
            ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"],
        ),
        (
            "Europe/Berlin",
            date(2026, 3, 29),
            23,
            ["2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00"],
        ),
        (
            "Europe/Berlin",
            date(2026, 10, 25),
            25,
            ["2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00"],
        ),
        (
            "America/Sao_Paulo",
            date(2018, 11, 4),
            23,
            ["2018-11-04T01:00:00-02:00", "2018-11-04T02:00:00-02:00"],
        ),
        (
            "America/Sao_Paulo",
            date(2018, 2, 17),
            25,
            ["2018-02-17T23:00:00-02:00", "2018-02-17T23:00:00-03:00"],
        ),
    ],
)
def test_hourly_schedule_follows_elapsed_hours_across_a_change(
    tz: str, day: date, count: int, around_change: list[str]
) -> None:
    """An hourly job fires every real hour (23 or 25 that day), each with a distinct key."""
    found = occurrences_on("0 * * * *", tz, day)
    assert len(found) == len(set(found)) == count
    start = found.index(around_change[0])
    assert found[start : start + 2] == around_change


def test_fall_back_repeated_time_resolves_to_its_first_pass_until_the_next_day() -> None:
    """Both passes of 01:30 on the New York fall-back day belong to the same, single window."""
    cron, tz = "30 1 * * *", "America/New_York"
    first_pass = resolve(cron, tz, at("2026-11-01T01:45:00-04:00"), "date")
    second_pass = resolve(cron, tz, at("2026-11-01T01:15:00-05:00"), "date")
    after = resolve(cron, tz, at("2026-11-01T01:45:00-05:00"), "date")
    assert first_pass.occurrence.isoformat() == "2026-11-01T01:30:00-04:00"
    assert first_pass == second_pass == after
    assert next_occurrence(cron, tz, at("2026-11-01T01:45:00-05:00")).isoformat() == (
        "2026-11-02T01:30:00-05:00"
    )


def test_next_occurrence_agrees_with_scheduled_occurrence_where_cronsim_skips() -> None:
    """Where cronsim's forward walk skips an occurrence (a 30-minute change), next still finds it.

    Lord Howe falls back from 02:00+11:00 to 01:30+10:30; iterating forward from 00:15, cronsim
    jumps to 04:15 although 02:15+10:30 matches the schedule and reverse iteration finds it.
    """
    cron, tz = "15 */2 * * *", "Australia/Lord_Howe"
    before = at("2026-04-05T01:50:00+10:30")
    after = at("2026-04-05T02:20:00+10:30")
    assert scheduled_occurrence(cron, tz, before).isoformat() == "2026-04-05T00:15:00+11:00"
    assert next_occurrence(cron, tz, before).isoformat() == "2026-04-05T02:15:00+10:30"
    assert scheduled_occurrence(cron, tz, after).isoformat() == "2026-04-05T02:15:00+10:30"
