"""An expectation reused over its span (the status reader remembers one per schedule until it
stops holding) is the expectation computed afresh at every instant of that span."""

from __future__ import annotations

from dataclasses import astuple
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tenure.schedule import KeyFormat
from tenure_server.app.status import Expectations
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.status import Expectation, expect, expect_span
from tests.property.test_schedule_properties import SCHEDULES, ZONES, instants

EXAMPLES = settings(max_examples=150, deadline=None)
_TICK = timedelta(microseconds=1)
deadlines = st.sampled_from([60.0, 1800.0, 3600.0, 7200.0, 86_400.0, 3 * 86_400.0])
keys = st.sampled_from(["occurrence", "date", "previous_day"])


def job(cron: str, zone: str, key: KeyFormat, deadline: float) -> Job:
    since = datetime(2000, 1, 1, tzinfo=UTC)
    return Job("job", JobSpec(cron, zone, key, "lease", deadline), since, since, since)


def exactly(expectation: Expectation) -> tuple[object, ...]:
    """Every field, datetimes with their offsets: == within a zone ignores fold."""
    return tuple(
        value.isoformat() if isinstance(value, datetime) else value
        for value in astuple(expectation)
    )


@EXAMPLES
@given(
    st.sampled_from(SCHEDULES),
    st.sampled_from(ZONES),
    keys,
    deadlines,
    instants,
    st.floats(0, 1),
)
def test_an_expectation_holds_over_its_whole_span(
    cron: str, zone: str, key: KeyFormat, deadline: float, now: datetime, where: float
) -> None:
    """From its first instant to its last microsecond, and anywhere between."""
    subject = job(cron, zone, key, deadline)
    span = expect_span(subject.spec, now)
    assert span.holds_at(now)
    assert exactly(span.expectation) == exactly(expect(subject, now))
    inside = span.since + (span.until - span.since) * where
    for instant in (span.since, min(inside, span.until - _TICK), span.until - _TICK):
        assert exactly(expect(subject, instant)) == exactly(span.expectation), instant


@EXAMPLES
@given(st.sampled_from(SCHEDULES), st.sampled_from(ZONES), deadlines, instants, st.integers(0, 5))
def test_remembered_expectations_are_the_ones_computed_afresh(
    cron: str, zone: str, deadline: float, now: datetime, hours: int
) -> None:
    """The reader's memory, asked at one instant and then later, answers as `expect` does."""
    subject = job(cron, zone, "occurrence", deadline)
    remembered = Expectations(known_specs=100)
    for instant in (now, now + timedelta(hours=hours), now + timedelta(minutes=hours)):
        found = remembered.each([subject], instant)["job"]
        assert exactly(found) == exactly(expect(subject, instant))
