"""Refusal rules and name arithmetic, without a database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tenure_server.domain import errors
from tenure_server.domain.fences import Fence, VerifyFacts, verify_refusal
from tenure_server.domain.leases import (
    HoldingFacts,
    Lease,
    acquire_refusal,
    force_release_refusal,
    release_outcome,
    renew_refusal,
)
from tenure_server.domain.limits import Limits
from tenure_server.domain.names import (
    check_window_key,
    decode_cursor,
    encode_cursor,
    prefix_upper_bound,
)
from tenure_server.domain.windows import (
    ANY_TIME,
    Holding,
    NotDue,
    Schedule,
    Window,
    WindowFacts,
    claim_refusal,
    complete_outcome,
    due,
)

T = datetime(2026, 9, 25, 3, 5, tzinfo=UTC)
GRANT = "100"
LEASE = Lease("l", "a", 3, 30.0, T, T, T, None, "p", GRANT, True, 30.0)
WINDOW = Window("j", "w", "l", "a", 3, 1, T, None)
MINE = Holding("l", "a", 3, "p")
LIMITS = Limits(1, 3600, 60, 500, 100, 1000, 30.0)
NONE = HoldingFacts(None, None, False, False, False, False, False)
# Held by "a" of "p": facts as explain_holding answers them for another holder.
OTHERS = HoldingFacts(LEASE, None, False, False, False, False, False)


def test_acquire_refusal_names_the_holder_or_asks_to_retry() -> None:
    """Held by another: lease-held; an acquire that would pass now: try the statement again."""
    refusal = acquire_refusal("l", OTHERS)
    assert isinstance(refusal, errors.LeaseHeld)
    assert refusal.holder == "a"
    assert acquire_refusal("l", replace(OTHERS, may_acquire=True)) is None
    assert acquire_refusal("l", replace(NONE, may_acquire=True)) is None


def test_acquire_refusal_names_the_exhausted_generation_of_a_free_lease() -> None:
    """A free lease, or a name without one, refused for want of a generation: generation-exhausted
    with the last one; a held lease is still lease-held."""
    free = replace(OTHERS, lease=LEASE._replace(held=False))
    for facts, generation in ((free, 3), (NONE, 9)):
        refusal = acquire_refusal("l", replace(facts, exhausted_at=generation))
        assert isinstance(refusal, errors.GenerationExhausted)
        assert refusal.generation == generation
        assert ("floor" in str(refusal)) is (facts.lease is None)
    assert isinstance(acquire_refusal("l", replace(OTHERS, exhausted_at=3)), errors.LeaseHeld)


def test_force_release_refusal() -> None:
    """No lease: not found; no generation left to move it to: exhausted; else the state moved."""
    assert isinstance(force_release_refusal("l", NONE), errors.LeaseNotFound)
    exhausted = replace(OTHERS, exhausted_at=3)
    assert isinstance(force_release_refusal("l", exhausted), errors.GenerationExhausted)
    assert force_release_refusal("l", OTHERS) is None


def test_renew_refusal_tells_a_lost_lease_from_another_principal() -> None:
    """The holding named under another principal is forbidden, else lost."""
    foreign = replace(OTHERS, named=True, foreign=True)
    assert isinstance(renew_refusal("l", 3, foreign), errors.Forbidden)
    assert isinstance(renew_refusal("l", 2, OTHERS), errors.LeaseLost)
    assert isinstance(renew_refusal("l", 3, NONE), errors.LeaseLost)


def test_release_outcome() -> None:
    """Unknown lease: not found; other holding: lost; other principal: forbidden; already
    released by me: the lease; a release that would pass now: decide again; an older grant:
    lost."""
    mine = replace(OTHERS, named=True)
    assert isinstance(release_outcome("l", 3, NONE), errors.LeaseNotFound)
    assert isinstance(release_outcome("l", 2, OTHERS), errors.LeaseLost)
    assert isinstance(
        release_outcome("l", 3, replace(mine, foreign=True)), errors.HoldingOfAnotherPrincipal
    )
    released = LEASE._replace(released_at=T, held=False)
    assert release_outcome("l", 3, replace(mine, lease=released)) == released
    assert release_outcome("l", 3, replace(mine, may_release=True)) is None
    assert isinstance(release_outcome("l", 3, mine), errors.LeaseLost)


def facts(window: Window | None, **found: bool) -> WindowFacts:
    """explain_window's facts for `window`, all false but those given."""
    return WindowFacts(
        window,
        holds=found.get("holds", False),
        foreign=found.get("foreign", False),
        bound_elsewhere=found.get("bound_elsewhere", False),
        claimed_by_holding=found.get("claimed_by_holding", False),
        may_claim=found.get("may_claim", False),
        may_complete=found.get("may_complete", False),
    )


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (facts(WINDOW._replace(completed_at=T), holds=True), errors.WindowCompleted),
        (facts(WINDOW._replace(completed_at=T)), errors.WindowCompleted),
        (
            facts(WINDOW._replace(lease="other"), holds=True, bound_elsewhere=True),
            errors.WindowLeaseMismatch,
        ),
        (facts(WINDOW), errors.LeaseLost),
        (facts(WINDOW, foreign=True), errors.HoldingOfAnotherPrincipal),
        (facts(None), errors.LeaseLost),
        (facts(WINDOW._replace(generation=4), holds=True), errors.LeaseLost),
        (facts(WINDOW, holds=True, may_claim=True), None),
        (facts(None, holds=True, may_claim=True), None),
    ],
)
def test_claim_refusal(found: WindowFacts, expected: type | None) -> None:
    """Completed first, then the lease binding, then the holding itself; a claim that would
    pass now is decided again."""
    refusal = claim_refusal(found, MINE, "j", "w")
    assert refusal is None if expected is None else isinstance(refusal, expected)


def test_a_window_not_due_is_refused_after_a_completed_one() -> None:
    """Not due comes after completed (permanent) and before anything about the holding."""
    not_due = NotDue(T, T, 30.0)
    done = facts(WINDOW._replace(completed_at=T), holds=True)
    assert isinstance(
        claim_refusal(replace(done, not_due=not_due), MINE, "j", "w"), errors.WindowCompleted
    )
    for found in (
        facts(WINDOW, holds=True),
        facts(None),
        facts(WINDOW._replace(lease="x"), foreign=True, bound_elsewhere=True),
    ):
        refusal = claim_refusal(replace(found, not_due=not_due), MINE, "j", "w")
        assert isinstance(refusal, errors.WindowNotDue)


@pytest.mark.parametrize(
    ("window", "key", "occurrence"),
    [
        ("2026-12-06", "date", datetime(2026, 12, 6, tzinfo=UTC)),
        ("w", "date", None),
        ("9999-12-31T23:59:59-23:59", "occurrence", datetime.max.replace(tzinfo=UTC)),
        ("0001-01-01T00:00:00+23:59", "occurrence", datetime.min.replace(tzinfo=UTC)),
    ],
)
def test_when_a_registered_jobs_window_is_due(
    window: str, key: str, occurrence: datetime | None
) -> None:
    """A registered job's window is due at its occurrence in UTC (clamped to what datetime
    holds), or at any time when its key is not one of the job's; an unregistered job's always."""
    registered = Schedule("0 0 * * *", "UTC", "date" if key == "date" else "occurrence")
    assert due(registered, window, 30.0).occurrence == occurrence
    assert due(None, window, 30.0) == ANY_TIME


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (facts(WINDOW._replace(completed_at=T), claimed_by_holding=True), Window),
        (facts(WINDOW._replace(completed_at=T, holder="b"), holds=True), errors.WindowCompleted),
        (facts(WINDOW, claimed_by_holding=True), errors.LeaseLost),
        (facts(WINDOW, foreign=True, claimed_by_holding=True), errors.HoldingOfAnotherPrincipal),
        (facts(None, holds=True), errors.WindowNotClaimed),
        (facts(WINDOW._replace(generation=2), holds=True), errors.WindowNotClaimed),
        (facts(WINDOW, holds=True, claimed_by_holding=True, may_complete=True), None),
    ],
)
def test_complete_outcome(found: WindowFacts, expected: type | None) -> None:
    """A repeated completion by the same holding succeeds; anything else explains itself."""
    outcome = complete_outcome(found, MINE, "j", "w")
    assert outcome is None if expected is None else isinstance(outcome, expected)


def verified(fence: Fence | None, generation: int | None, **found: bool) -> VerifyFacts:
    """explain_fences' facts, all false but those given; highest as the read computes it."""
    known = [g for g in (generation, fence.highest if fence else None) if g is not None]
    highest = max(known, default=None)
    return VerifyFacts(
        fence,
        generation,
        accepted=found.get("accepted", False),
        bound_elsewhere=found.get("bound_elsewhere", False),
        unknown=found.get("unknown", False),
        stale=found.get("stale", False),
        highest=highest,
        forced=found.get("forced", False),
    )


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (verified(Fence("r", "other", 1, T), 5, bound_elsewhere=True), errors.FenceLeaseMismatch),
        (verified(None, None, unknown=True), errors.UnknownGeneration),
        (verified(Fence("r", "l", 1, T), 3, unknown=True), errors.UnknownGeneration),
        (verified(Fence("r", "l", 4, T), 5, stale=True), errors.StaleGeneration),
        (verified(None, 5, stale=True, forced=True), errors.StaleGeneration),
        (verified(Fence("r", "l", 5, T), 5, forced=True), errors.UnknownGeneration),
        (verified(Fence("r", "l", 3, T), 5, accepted=True), None),
        (verified(None, 5, accepted=True), None),
    ],
)
def test_verify_refusal(found: VerifyFacts, expected: type | None) -> None:
    """Another lease, a forged generation, one below the lease's current generation (fenced yet
    or not), the generation a force-release handed to nobody — each has its own refusal; a
    verify that would pass now is decided again."""
    refusal = verify_refusal("r", "l", 4, found)
    assert refusal is None if expected is None else isinstance(refusal, expected)


def test_prefix_bounds_cover_exactly_the_prefix() -> None:
    """Every name with the prefix sorts inside [prefix, upper), and the next one does not."""
    upper = prefix_upper_bound("billing.")
    assert upper == "billing/"
    assert "billing." <= "billing.zzz" < upper
    assert not ("billing." <= "billing_x" < upper)
    assert prefix_upper_bound("") is None


def test_cursors_round_trip_and_refuse_garbage() -> None:
    """A cursor we handed out decodes to its name; anything else is invalid input."""
    assert decode_cursor(encode_cursor("close-day:eu")) == "close-day:eu"
    assert decode_cursor(None) is None
    for bad in ("!!!", "", "\u00ff", encode_cursor("x" * 300)):
        with pytest.raises(errors.InvalidInput):
            decode_cursor(bad)


@pytest.mark.parametrize("ttl", [0.5, 3601, float("nan"), float("inf")])
def test_ttls_outside_the_bounds_are_refused(ttl: float) -> None:
    """No eternal leases and none that flap: TTLs stay within the configured bounds."""
    with pytest.raises(errors.InvalidInput):
        LIMITS.ttl(ttl)
    assert LIMITS.ttl(1) == 1


@pytest.mark.parametrize("seconds", [-1, 30.001, float("nan"), float("inf")])
def test_early_tolerances_outside_the_bound_are_refused(seconds: float) -> None:
    """An early tolerance is between 0 and the configured maximum."""
    with pytest.raises(errors.InvalidInput, match="early_tolerance_seconds"):
        LIMITS.early_tolerance(seconds)
    assert LIMITS.early_tolerance(30) == 30


def test_dot_window_keys_are_refused() -> None:
    """ "." and ".." match the character set but cannot travel as a path segment."""
    for key in (".", ".."):
        with pytest.raises(ValueError, match="window key"):
            check_window_key(key)
    assert check_window_key("...") == "..."
