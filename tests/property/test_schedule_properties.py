"""Schedule arithmetic over random instants: every instant belongs to exactly one window, and a
window never stands for an occurrence later than its own."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from tenure import schedule
from tenure.schedule import (
    KeyFormat,
    next_occurrence,
    scheduled_occurrence,
    window_key,
    window_occurrence,
)

ZONES = ["America/Sao_Paulo", "Europe/Berlin", "America/New_York", "UTC"]
# Times inside the DST gaps and overlaps of those zones, plus schedules that ignore wall time.
SCHEDULES = [
    "5 0 * * *",
    "0 0 * * *",
    "30 1 * * *",
    "30 2 * * *",
    "0 * * * *",
    "*/20 * * * *",
    "15 9 * * 1-5",
    "0,30 1-3 * * *",
    "0 3 1 * *",
]
DAILY = ["5 0 * * *", "0 0 * * *", "30 1 * * *", "30 2 * * *", "30 23 * * *", "0 12 * * *"]
WINDOW_KEY = re.compile(r"^[A-Za-z0-9._:+-]{1,100}$")

# A few seconds in all: each example makes a handful of cronsim walks.
EXAMPLES = settings(max_examples=150, deadline=None)

instants = st.datetimes(
    min_value=datetime(2018, 1, 1),
    max_value=datetime(2030, 12, 31),
    # Local zones too: hypothesis then also produces folds and times inside DST gaps.
    timezones=st.sampled_from([UTC, *(ZoneInfo(name) for name in ZONES)]),
)


def same_instant(left: datetime, right: datetime) -> bool:
    """Equal as instants and offsets; == within one zone ignores fold and would not notice."""
    return left.isoformat() == right.isoformat()


def fresh_bracket(cron: str, tz: str, now: datetime) -> tuple[datetime, datetime]:
    """The answer of a process that never asked before: nothing remembered."""
    schedule._known.clear()
    return scheduled_occurrence(cron, tz, now), next_occurrence(cron, tz, now)


@EXAMPLES
@given(
    cron=st.sampled_from(SCHEDULES),
    tz=st.sampled_from(ZONES),
    now=instants,
    asked_before=st.lists(
        st.timedeltas(min_value=-timedelta(days=2), max_value=timedelta(days=2)), max_size=8
    ),
)
def test_an_answer_does_not_depend_on_what_was_asked_before(
    cron: str, tz: str, now: datetime, asked_before: list[timedelta]
) -> None:
    """Brackets are remembered per schedule; an instant near remembered ones, folds and DST
    gaps included, is answered as a fresh cronsim walk answers it."""
    expected = fresh_bracket(cron, tz, now)
    for shift in asked_before:
        scheduled_occurrence(cron, tz, now.astimezone(UTC) + shift)
        scheduled_occurrence(cron, tz, (now.astimezone(UTC) + shift).astimezone(ZoneInfo(tz)))
    answered = scheduled_occurrence(cron, tz, now), next_occurrence(cron, tz, now)
    assert all(map(same_instant, answered, expected))
    # The edges of a remembered bracket: its end begins the next one, its start - 1 µs the last.
    before = expected[0].astimezone(UTC) - timedelta(microseconds=1)
    edges = (expected[1], before)
    remembered = [(scheduled_occurrence(cron, tz, e), next_occurrence(cron, tz, e)) for e in edges]
    for edge, answered in zip(edges, remembered, strict=True):
        assert all(map(same_instant, answered, fresh_bracket(cron, tz, edge)))


@EXAMPLES
@given(
    cron=st.sampled_from(SCHEDULES),
    tz=st.sampled_from(ZONES),
    now=instants,
    position=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_every_instant_belongs_to_exactly_one_window(
    cron: str, tz: str, now: datetime, position: float
) -> None:
    """occurrence ≤ now < next, and every instant in [occurrence, next) maps to occurrence
    (each asked afresh: a remembered bracket would answer for every instant inside it)."""
    occurrence, following = fresh_bracket(cron, tz, now)
    assert occurrence.tzinfo == following.tzinfo == ZoneInfo(tz)
    assert occurrence.astimezone(UTC) <= now.astimezone(UTC) < following.astimezone(UTC)
    assert WINDOW_KEY.fullmatch(window_key(occurrence))

    # In UTC: adding a timedelta to a zoned datetime moves its wall clock, not the instant.
    first, last = occurrence.astimezone(UTC), following.astimezone(UTC) - timedelta(microseconds=1)
    inside = first + min((last - first) * position, last - first)
    for instant in (occurrence, inside, last):
        assert all(map(same_instant, fresh_bracket(cron, tz, instant), (occurrence, following)))
    assert same_instant(fresh_bracket(cron, tz, following)[0], following)


@EXAMPLES
@given(cron=st.sampled_from(DAILY), tz=st.sampled_from(ZONES), start=instants)
def test_daily_schedule_has_exactly_one_window_per_business_day(
    cron: str, tz: str, start: datetime
) -> None:
    """Consecutive occurrences of a daily schedule fall on consecutive, distinct local dates."""
    occurrence = scheduled_occurrence(cron, tz, start)
    days: list[date] = []
    previous_days: list[date] = []
    for _ in range(8):
        days.append(date.fromisoformat(window_key(occurrence, "date")))
        previous_days.append(date.fromisoformat(window_key(occurrence, "previous_day")))
        occurrence = next_occurrence(cron, tz, occurrence)
    assert all(later - earlier == timedelta(days=1) for earlier, later in pairwise(days))
    assert previous_days == [day - timedelta(days=1) for day in days]


@EXAMPLES
@given(
    cron=st.sampled_from(SCHEDULES + DAILY),
    tz=st.sampled_from(ZONES),
    now=instants,
    key=st.sampled_from(["occurrence", "date", "previous_day"]),
)
def test_a_window_stands_for_no_occurrence_after_its_own(
    cron: str, tz: str, now: datetime, key: KeyFormat
) -> None:
    """The occurrence a window key stands for is at or before the one it was made from (the
    same one for occurrence keys and daily schedules): a resolved window is always due."""
    occurrence = scheduled_occurrence(cron, tz, now)
    stands_for = window_occurrence(cron, tz, window_key(occurrence, key), key)
    assert stands_for is not None
    assert stands_for.astimezone(UTC) <= occurrence.astimezone(UTC)
    if key == "occurrence" or cron in DAILY:
        assert stands_for.astimezone(UTC) == occurrence.astimezone(UTC)
