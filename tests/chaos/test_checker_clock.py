"""The checker under database clock steps (F11): an overlap a forward step explains is measured,
not counted; database instants out of order by no more than a backward step are excused."""

from __future__ import annotations

from dataclasses import replace

import pytest
from chaos.checker import check
from chaos.history import FaultEvent, History

from tests.chaos.test_checker import grant, op, properties, replace_op

SECOND = 1_000_000  # database microseconds


def step(t: float, offset: float, previous: float) -> FaultEvent:
    return FaultEvent("F11", "step", t, {"offset": offset, "previous": previous})


def test_overlap_within_a_forward_clock_step_is_measured_not_counted() -> None:
    """After the database's clock stepped 1 s forward, a grant 0.6 s before the previous
    holder's belief ended is an overlap the step explains: excused with its length; the strict
    checker (clock=False) counts it; an overlap longer than the step is a violation still."""
    first = grant("a", 1, 0.0, 0.1, ttl=2.0)
    second = replace_op(grant("b", 2, 1.3, 1.4), acquired_at=int(2.3 * SECOND))
    history = History(operations=(first, second), faults=(step(0.5, 1.0, 0.0),))
    verdict = check(history)
    assert verdict.violations == ()
    [overlap] = verdict.excused
    assert overlap.property == 3
    assert overlap.overlap == pytest.approx(0.6)
    assert properties(check(history, clock=False)) == {3}
    small = replace(history, faults=(step(0.5, 0.5, 0.0),))
    assert properties(check(small)) == {3}


def test_a_backward_step_excuses_database_instants_out_of_order_by_no_more() -> None:
    """After a 1 s backward step, a next generation whose acquired_at is 0.5 s before the
    previous expiry may be of the right real order: excused; 1.5 s before is a violation."""
    first = grant("a", 1, 0.0, 0.1)
    release = op("a", "release", 0.2, 0.25, holder="a", generation=1, expires_at=int(0.2 * SECOND))
    behind = replace_op(grant("b", 2, 0.3, 0.4), acquired_at=int(-0.3 * SECOND), deadline=None)
    steps = (step(0.26, -1.0, 0.0), step(5.0, 0.0, -1.0))
    history = History(operations=(first, release, behind), faults=steps)
    verdict = check(history)
    assert verdict.violations == ()
    assert {violation.property for violation in verdict.excused} == {2}
    assert properties(check(history, clock=False)) == {2}
    further = replace_op(behind, acquired_at=int(-1.3 * SECOND))
    assert properties(check(replace(history, operations=(first, release, further)))) == {2}
