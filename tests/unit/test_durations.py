"""`tenure.durations`: the one way `tenure status` and the dashboard print a duration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenure.durations import duration, relative

NOW = datetime(2026, 9, 25, 3, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "0 s"),
        (42, "42 s"),
        (185, "3 min 5 s"),
        (7800, "2 h 10 min"),
        (273_600, "3 d 4 h"),
        (-185, "3 min 5 s"),
    ],
)
def test_a_duration_shows_its_two_largest_units(seconds: float, text: str) -> None:
    """Rounded to the second, in the two largest units it has; the sign is dropped."""
    assert duration(seconds) == text


def test_a_moment_is_in_the_future_or_ago() -> None:
    """After now: `in …`; otherwise `… ago`."""
    assert relative(NOW + timedelta(seconds=185), NOW) == "in 3 min 5 s"
    assert relative(NOW - timedelta(seconds=4), NOW) == "4 s ago"


def test_no_value_is_the_callers_sign() -> None:
    """`-` by default (a terminal); the dashboard passes its own."""
    assert (duration(None), relative(None, NOW)) == ("-", "-")
    assert (duration(None, "—"), relative(None, NOW, "—")) == ("—", "—")
