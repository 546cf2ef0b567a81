"""The checker (`chaos.checker.check`) on hand-made histories: each of the seven properties
passes a clean history and reports a minimal violating one; unknown outcomes are judged soundly.

Client instants are monotonic seconds; database instants are integer microseconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from chaos.checker import PROPERTIES, Verdict, check
from chaos.history import (
    Belief,
    DatabaseFacts,
    DurabilityProbe,
    Effect,
    FaultEvent,
    History,
    LeaseEvent,
    Operation,
    Outcome,
    ResourceWrite,
    WindowEvent,
    WindowRow,
    load,
)

LEASE = "L"
SECOND = 1_000_000  # database microseconds


def op(
    process: str,
    kind: str,
    sent: float,
    received: float | None,
    outcome: Outcome = "ok",
    **facts: Any,
) -> Operation:
    """One operation on lease `L` (unless `lease` is given)."""
    facts.setdefault("lease", LEASE)
    return Operation(process, kind, sent=sent, received=received, outcome=outcome, **facts)


def grant(
    process: str, generation: int, sent: float, received: float, ttl: float = 1.0
) -> Operation:
    """An acquire answered ok, with the client's belief sent + TTL and the database instants."""
    return op(
        process,
        "acquire",
        sent,
        received,
        holder=process,
        generation=generation,
        ttl=ttl,
        acquired_at=int(sent * SECOND),
        expires_at=int((sent + ttl) * SECOND),
        deadline=sent + ttl,
    )


def event(
    number: int, generation: int, holder: str, at: float, kind: str = "acquired"
) -> LeaseEvent:
    return LeaseEvent(number, LEASE, kind, holder, generation, int(at * SECOND))


def facts(*events: LeaseEvent, **more: Any) -> DatabaseFacts:
    return DatabaseFacts(lease_events=events, settings={"synchronous_commit": "on"}, **more)


def properties(verdict: Verdict) -> set[int]:
    return {violation.property for violation in verdict.violations}


# A clean history and a minimal violating one, per property ------------------------------------


def p1() -> tuple[History, History]:
    clean = History(operations=(grant("a", 1, 0.0, 0.1), grant("b", 2, 1.2, 1.3)))
    twice = History(operations=(grant("a", 1, 0.0, 0.1), grant("b", 1, 1.2, 1.3)))
    return clean, twice


def p2() -> tuple[History, History]:
    first = grant("a", 1, 0.0, 0.1)
    clean = History(operations=(first, grant("b", 2, 1.0, 1.1)))
    # b's generation began (database clock) at 0.5, while a's ran until 1.0
    early = replace_op(grant("b", 2, 1.0, 1.1), acquired_at=int(0.5 * SECOND), deadline=None)
    return clean, History(operations=(first, early))


def p3() -> tuple[History, History]:
    clean = History(operations=(grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 1.1)))
    belief = Belief("a", LEASE, 1, "a", 0.0, 1.5)  # a believed until 1.5; b was told at 1.1
    violating = History(
        operations=(grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 1.1)), beliefs=(belief,)
    )
    return clean, violating


def p4() -> tuple[History, History]:
    def write(number: int, generation: int, at: float) -> ResourceWrite:
        return ResourceWrite(
            "http", number, LEASE, "ab"[generation - 1], generation, int(at * SECOND)
        )

    events = (event(1, 1, "a", 0.0), event(2, 2, "b", 1.0))
    ops = (grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 1.1))
    clean = History(ops, facts=facts(*events, writes=(write(1, 1, 0.5), write(2, 2, 1.5))))
    stale = (write(1, 1, 0.5), write(2, 2, 1.5), write(3, 1, 1.6))
    return clean, History(ops, facts=facts(*events, writes=stale))


def p5() -> tuple[History, History]:
    ops = (grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 1.1))
    clean = History(ops, probes=(DurabilityProbe(3.0, "immediate", {LEASE: 2}),))
    lost = History(ops, probes=(DurabilityProbe(3.0, "immediate", {LEASE: 1}),))
    return clean, lost


def p6() -> tuple[History, History]:
    def window(number: int, kind: str, holder: str, generation: int) -> WindowEvent:
        return WindowEvent(number, "job", kind, "w1", LEASE, holder, generation)

    events = (event(1, 1, "a", 0.0), event(2, 2, "b", 1.0))
    clean_windows = (window(1, "claimed", "a", 1), window(2, "completed", "a", 1))
    row = WindowRow("job", "w1", LEASE, "a", 1, completed=True)
    clean = History(facts=facts(*events, window_events=clean_windows, windows=(row,)))
    # a claimed, b reclaimed, a (no longer the latest claim) completed
    stale = (
        window(1, "claimed", "a", 1),
        window(2, "claimed", "b", 2),
        window(3, "completed", "a", 1),
    )
    return clean, History(facts=facts(*events, window_events=stale, windows=(row,)))


def p7() -> tuple[History, History]:
    heal = FaultEvent("F3", "heal", 10.0)
    probe = op("probe", "acquire", 10.2, 10.3, holder="probe", generation=1)
    clean = History(operations=(probe,), faults=(heal,))
    late = replace_op(probe, sent=20.0, received=20.1)
    return clean, History(operations=(late,), faults=(heal,))


def replace_op(operation: Operation, **changes: Any) -> Operation:
    return replace(operation, **changes)


CASES: dict[int, Callable[[], tuple[History, History]]] = {
    1: p1,
    2: p2,
    3: p3,
    4: p4,
    5: p5,
    6: p6,
    7: p7,
}


@pytest.mark.parametrize("number", sorted(CASES))
def test_clean_history_passes(number: int) -> None:
    """A clean history of each property's shape has no violation at all."""
    clean, _ = CASES[number]()
    verdict = check(clean, liveness_bound=3.0)
    assert verdict.violations == ()
    assert verdict.ok


@pytest.mark.parametrize("number", sorted(CASES))
def test_violating_history_is_reported_under_its_property(number: int) -> None:
    """A minimal violation of each property is reported, and only under that property."""
    _, violating = CASES[number]()
    verdict = check(violating, liveness_bound=3.0)
    assert properties(verdict) == {number}, verdict.violations
    assert not verdict.ok
    assert verdict.count(number) >= 1
    assert number in PROPERTIES


def test_every_property_has_a_case() -> None:
    """The cases cover the seven properties the checker names."""
    assert set(CASES) == set(PROPERTIES) == set(range(1, 8))


# 1. Generations ------------------------------------------------------------------------------


def test_lower_generation_granted_after_a_higher_one_was_answered() -> None:
    """A grant sent after a higher generation was answered, yet lower, is reported."""
    history = History(operations=(grant("a", 2, 0.0, 0.1), grant("b", 1, 1.2, 1.3)))
    assert 1 in properties(check(history))


def test_overlapping_requests_may_be_granted_in_either_order() -> None:
    """Two grants whose requests overlap in time are not ordered by the checker."""
    later = replace_op(grant("a", 2, 0.0, 0.5), acquired_at=int(0.2 * SECOND))
    history = History(operations=(later, grant("b", 1, 0.1, 0.2, ttl=0.05)))
    assert check(history).violations == ()


def test_same_holder_regranted_the_same_holding_is_one_holding() -> None:
    """The same holder told the same generation twice (a retry) is not a double grant."""
    again = replace_op(grant("a", 1, 0.05, 0.15), acquired_at=0)
    history = History(operations=(grant("a", 1, 0.0, 0.1), again))
    assert check(history).violations == ()


def test_database_event_log_with_a_repeated_generation_is_reported() -> None:
    """The database's own event log must increase strictly per lease."""
    history = History(facts=facts(event(1, 1, "a", 0.0), event(2, 1, "b", 1.0)))
    assert properties(check(history)) == {1}


# 2. Validity intervals -----------------------------------------------------------------------


def test_unknown_release_gives_no_bound_on_the_validity_interval() -> None:
    """A release with an unknown outcome may have ended the holding early: no overlap proved."""
    first = grant("a", 1, 0.0, 0.1)
    release = op("a", "release", 0.2, None, "unknown", holder="a", generation=1)
    second = replace_op(grant("b", 2, 0.3, 0.4), deadline=None)
    assert check(History(operations=(first, release, second))).violations == ()


def test_acknowledged_release_ends_the_validity_interval() -> None:
    """An acknowledged release's expiry is the holding's end: a grant after it is clean."""
    first = grant("a", 1, 0.0, 0.1)
    release = op("a", "release", 0.2, 0.25, holder="a", generation=1, expires_at=int(0.2 * SECOND))
    second = replace_op(grant("b", 2, 0.3, 0.4), deadline=None)
    assert check(History(operations=(first, release, second))).violations == ()


# 3. Beliefs ----------------------------------------------------------------------------------


def test_belief_is_compared_with_the_receipt_of_the_next_grant_not_its_send() -> None:
    """A waiting acquire sent during another's belief but answered after it is no violation."""
    waiting = replace_op(grant("b", 2, 0.5, 1.2), acquired_at=int(1.0 * SECOND), wait=5.0)
    history = History(operations=(grant("a", 1, 0.0, 0.1), waiting))
    assert check(history).violations == ()


def test_rebuilt_belief_outlasting_the_next_grant_is_reported() -> None:
    """A client deadline (from its operations) after the next grant's answer is reported."""
    history = History(operations=(grant("a", 1, 0.0, 0.1, ttl=2.0), grant("b", 2, 1.0, 1.1)))
    found = check(history).violations
    assert {violation.property for violation in found} >= {3}


def test_release_cuts_the_belief_short() -> None:
    """A client that released before the next grant no longer believes it holds the lease."""
    first = grant("a", 1, 0.0, 0.1, ttl=2.0)
    release = op("a", "release", 0.5, 0.6, holder="a", generation=1, expires_at=int(0.5 * SECOND))
    history = History(operations=(first, release, replace_op(grant("b", 2, 1.0, 1.1))))
    assert check(history).violations == ()


def test_side_effect_after_the_next_grant_is_reported() -> None:
    """An unfenced side effect written under a generation after a higher one was granted."""
    effect = Effect("a", LEASE, 1, "a", 1.5)
    ops = (grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 1.1))
    assert properties(check(History(operations=ops, effects=(effect,)))) == {3}


def test_holding_of_a_client_that_died_is_rebuilt_from_its_operations() -> None:
    """A client that held one generation twice, and died holding it the second time (no belief
    recorded for it), believed it held it from that acquire: its side effect then is clean,
    and that belief still outlasting the next grant is reported."""
    first = grant("a", 1, 0.0, 0.1)
    release = op("a", "release", 0.5, 0.6, "fail", holder="a", generation=1, error="lease-lost")
    recorded = Belief("a", LEASE, 1, "a", 0.0, 0.5)
    again = replace_op(grant("a", 1, 1.0, 1.1, ttl=2.0), acquired_at=0)  # the same holding
    effect = Effect("a", LEASE, 1, "a", 1.5)
    died = History(operations=(first, release, again), effects=(effect,), beliefs=(recorded,))
    assert check(died).violations == ()
    overtaken = replace(died, operations=(*died.operations, grant("b", 2, 2.0, 2.1)))
    assert 3 in properties(check(overtaken))


def test_unknown_acquire_is_not_a_grant() -> None:
    """An acquire with no answer may or may not have taken effect: it overtakes no belief."""
    lost = op("b", "acquire", 0.2, None, "unknown", holder="b")
    history = History(operations=(grant("a", 1, 0.0, 0.1), lost))
    assert check(history).violations == ()


# 4. Fenced resources -------------------------------------------------------------------------


def test_write_by_a_holder_not_granted_its_generation_is_reported() -> None:
    """A committed write must be by the holder its generation was granted to."""
    write = ResourceWrite("http", 1, LEASE, "b", 1, int(0.5 * SECOND))
    history = History(facts=facts(event(1, 1, "a", 0.0), writes=(write,)))
    assert properties(check(history)) == {4}


def test_sql_write_committed_after_the_next_grant_is_reported() -> None:
    """A same-database fenced write commits before the next generation is granted."""
    write = ResourceWrite("sql", 1, LEASE, "a", 1, int(1.5 * SECOND))
    events = (event(1, 1, "a", 0.0), event(2, 2, "b", 1.0, "taken_over"))
    assert properties(check(History(facts=facts(*events, writes=(write,))))) == {4}


# 5. Durability -------------------------------------------------------------------------------


def test_unknown_acquire_before_a_crash_may_be_lost() -> None:
    """An acquire never answered before a restart may be lost without a violation."""
    ops = (grant("a", 1, 0.0, 0.1), op("b", "acquire", 1.0, None, "unknown", holder="b"))
    history = History(ops, probes=(DurabilityProbe(3.0, "immediate", {LEASE: 1}),))
    assert check(history).violations == ()


def test_acknowledged_grant_counts_for_durability_even_if_answered_just_before_the_probe() -> None:
    """An acquire acknowledged ok before a restart is durable: a lower generation after it is
    reported, and so is its absence from the database's event log."""
    ops = (grant("a", 1, 0.0, 0.1), grant("b", 2, 1.0, 2.9))
    probe = DurabilityProbe(3.0, "immediate", {LEASE: 1})
    history = History(ops, probes=(probe,), facts=facts(event(1, 1, "a", 0.0)))
    found = check(history).violations
    assert {violation.property for violation in found} == {5}
    assert len(found) == 2  # below the acknowledged generation; missing from the event log


def test_answer_received_after_the_probe_is_not_yet_acknowledged() -> None:
    """A grant answered after the restart's probe is not held against that probe."""
    ops = (grant("a", 1, 0.0, 0.1), grant("b", 2, 2.5, 3.5))
    history = History(ops, probes=(DurabilityProbe(3.0, "fast", {LEASE: 1}),))
    assert check(history).violations == ()


# 6. Windows ----------------------------------------------------------------------------------


def test_window_completed_twice_is_reported() -> None:
    """At most one completion per window."""
    events = (
        WindowEvent(1, "job", "claimed", "w1", LEASE, "a", 1),
        WindowEvent(2, "job", "completed", "w1", LEASE, "a", 1),
        WindowEvent(3, "job", "completed", "w1", LEASE, "a", 1),
    )
    history = History(facts=facts(event(1, 1, "a", 0.0), window_events=events))
    assert properties(check(history)) == {6}


def test_completion_acknowledged_to_two_holdings_is_reported() -> None:
    """Two clients both told their completion of one window succeeded."""
    ops = (
        op("a", "complete", 0.0, 0.1, holder="a", generation=1, window="job/w1"),
        op("b", "complete", 1.0, 1.1, holder="b", generation=2, window="job/w1"),
    )
    assert properties(check(History(operations=ops))) == {6}


# 7. Liveness ---------------------------------------------------------------------------------


def test_stuck_lease_at_the_end_is_reported() -> None:
    """The final acquire of every lease must succeed."""
    final = op("final", "acquire", 0.0, 9.0, "fail", holder="final", error="lease-held")
    assert properties(check(History(operations=(final,)))) == {7}


def test_fault_with_no_successful_acquire_after_its_heal_is_reported() -> None:
    """A healed fault followed by no successful acquire at all is a liveness violation."""
    history = History(faults=(FaultEvent("F4", "heal", 10.0),))
    verdict = check(history)
    assert properties(verdict) == {7}
    assert verdict.recoveries[0].seconds is None


# The recorded form ---------------------------------------------------------------------------


def test_invoke_without_complete_loads_as_unknown(tmp_path: Path) -> None:
    """A request whose process died mid-request is unknown; a torn last line is skipped."""
    folder = tmp_path / "history"
    folder.mkdir()
    invoke = {"type": "invoke", "id": 1, "process": "w1", "op": "acquire", "lease": LEASE}
    lines = json.dumps(invoke | {"sent": 1.0}) + "\n" + '{"type": "complete", "id": 1'
    (folder / "w1.jsonl").write_text(lines, encoding="utf-8")
    history = load(tmp_path)
    assert [(o.outcome, o.received) for o in history.operations] == [("unknown", None)]
    assert check(history).violations == ()
