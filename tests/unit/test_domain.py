"""Refusal rules and name arithmetic, without a database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tenure_server.domain import errors
from tenure_server.domain.fences import Fence, LeaseGeneration, verify_refusal
from tenure_server.domain.leases import (
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
    LeaseState,
    NotDue,
    Schedule,
    Window,
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
HELD, GONE, FOREIGN = LeaseState(True), LeaseState(False), LeaseState(False, foreign=True)


def test_acquire_refusal_names_the_holder_or_asks_to_retry() -> None:
    """Held by another: lease-held; free, expired or mine meanwhile: try the statement again.
    The same holder string under another principal is another holder."""
    refusal = acquire_refusal("l", "b", "p", LEASE, None)
    assert isinstance(refusal, errors.LeaseHeld)
    assert refusal.holder == "a"
    assert acquire_refusal("l", "a", "p", LEASE, None) is None
    assert isinstance(acquire_refusal("l", "a", "intruder", LEASE, None), errors.LeaseHeld)
    assert acquire_refusal("l", "b", "p", LEASE._replace(held=False), None) is None
    assert acquire_refusal("l", "b", "p", None, None) is None


def test_acquire_refusal_names_the_exhausted_generation_of_a_free_lease() -> None:
    """A free lease, or a name without one, refused for want of a generation: generation-exhausted
    with the last one; a held lease is still lease-held (or retried by its own holder)."""
    for current, generation in ((LEASE._replace(held=False), 3), (None, 9)):
        refusal = acquire_refusal("l", "b", "p", current, generation)
        assert isinstance(refusal, errors.GenerationExhausted)
        assert refusal.generation == generation
    assert isinstance(acquire_refusal("l", "b", "p", LEASE, 3), errors.LeaseHeld)
    assert acquire_refusal("l", "a", "p", LEASE, 3) is None


def test_force_release_refusal() -> None:
    """No lease: not found; no generation left to move it to: exhausted; else the state moved."""
    assert isinstance(force_release_refusal("l", None, None), errors.LeaseNotFound)
    assert isinstance(force_release_refusal("l", LEASE, 3), errors.GenerationExhausted)
    assert force_release_refusal("l", LEASE, None) is None


def test_renew_refusal_tells_a_lost_lease_from_another_principal() -> None:
    """Right holder and generation under the wrong principal is forbidden, else lost."""
    assert isinstance(renew_refusal("l", "a", 3, "intruder", LEASE), errors.Forbidden)
    assert isinstance(renew_refusal("l", "a", 2, "p", LEASE), errors.LeaseLost)
    assert isinstance(renew_refusal("l", "a", 3, "p", None), errors.LeaseLost)


def test_release_outcome() -> None:
    """Unknown lease: not found; other holding: lost; other principal: forbidden; already
    released by me: the lease."""
    assert isinstance(release_outcome("l", "a", 3, "p", None, GRANT), errors.LeaseNotFound)
    assert isinstance(release_outcome("l", "a", 2, "p", LEASE, GRANT), errors.LeaseLost)
    assert isinstance(release_outcome("l", "b", 3, "p", LEASE, GRANT), errors.LeaseLost)
    assert isinstance(
        release_outcome("l", "a", 3, "x", LEASE, GRANT), errors.HoldingOfAnotherPrincipal
    )
    released = LEASE._replace(released_at=T, held=False)
    assert release_outcome("l", "a", 3, "p", released, GRANT) == released
    assert release_outcome("l", "a", 3, "p", LEASE, GRANT) is None
    assert isinstance(release_outcome("l", "a", 3, "p", LEASE, "1"), errors.LeaseLost)


@pytest.mark.parametrize(
    ("window", "held", "expected"),
    [
        (replace(WINDOW, completed_at=T), HELD, errors.WindowCompleted),
        (replace(WINDOW, completed_at=T), GONE, errors.WindowCompleted),
        (replace(WINDOW, lease="other"), HELD, errors.WindowLeaseMismatch),
        (WINDOW, GONE, errors.LeaseLost),
        (WINDOW, FOREIGN, errors.HoldingOfAnotherPrincipal),
        (None, GONE, errors.LeaseLost),
        (replace(WINDOW, generation=4), HELD, errors.LeaseLost),
        (WINDOW, HELD, None),
        (None, HELD, None),
    ],
)
def test_claim_refusal(window: Window | None, held: LeaseState, expected: type | None) -> None:
    """Completed first, then the lease binding, then the holding itself."""
    refusal = claim_refusal(MINE, window, held, "j", "w")
    assert refusal is None if expected is None else isinstance(refusal, expected)


def test_a_window_not_due_is_refused_after_a_completed_one() -> None:
    """Not due comes after completed (permanent) and before anything about the holding."""
    not_due = NotDue(T, T, 30.0)
    done = replace(WINDOW, completed_at=T)
    assert isinstance(claim_refusal(MINE, done, HELD, "j", "w", not_due), errors.WindowCompleted)
    for window, held in ((WINDOW, HELD), (None, GONE), (replace(WINDOW, lease="x"), FOREIGN)):
        refusal = claim_refusal(MINE, window, held, "j", "w", not_due)
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
    ("window", "held", "expected"),
    [
        (replace(WINDOW, completed_at=T), GONE, Window),
        (replace(WINDOW, completed_at=T, holder="b"), HELD, errors.WindowCompleted),
        (WINDOW, GONE, errors.LeaseLost),
        (WINDOW, FOREIGN, errors.HoldingOfAnotherPrincipal),
        (None, HELD, errors.WindowNotClaimed),
        (replace(WINDOW, generation=2), HELD, errors.WindowNotClaimed),
        (WINDOW, HELD, None),
    ],
)
def test_complete_outcome(window: Window | None, held: LeaseState, expected: type | None) -> None:
    """A repeated completion by the same holding succeeds; anything else explains itself."""
    outcome = complete_outcome(MINE, window, held, "j", "w")
    assert outcome is None if expected is None else isinstance(outcome, expected)


def HANDED(generation: int) -> LeaseGeneration:
    return LeaseGeneration(generation, forced=False)


def FORCED(generation: int) -> LeaseGeneration:
    return LeaseGeneration(generation, forced=True)


@pytest.mark.parametrize(
    ("fence", "current", "generation", "expected"),
    [
        (Fence("r", "other", 1, T), HANDED(5), 5, errors.FenceLeaseMismatch),
        (None, None, 1, errors.UnknownGeneration),
        (Fence("r", "l", 1, T), HANDED(3), 4, errors.UnknownGeneration),
        (Fence("r", "l", 4, T), HANDED(5), 3, errors.StaleGeneration),
        (Fence("r", "l", 3, T), HANDED(5), 4, errors.StaleGeneration),
        (None, HANDED(5), 4, errors.StaleGeneration),
        (None, FORCED(5), 4, errors.StaleGeneration),
        (Fence("r", "l", 5, T), FORCED(5), 5, errors.UnknownGeneration),
        (Fence("r", "l", 3, T), HANDED(5), 5, None),
        (None, HANDED(5), 5, None),
    ],
)
def test_verify_refusal(
    fence: Fence | None, current: LeaseGeneration | None, generation: int, expected: type | None
) -> None:
    """Another lease, a forged generation, one below the lease's current generation (fenced yet
    or not), the generation a force-release handed to nobody — each has its own refusal."""
    refusal = verify_refusal("r", "l", generation, fence, current)
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
