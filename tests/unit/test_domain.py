"""Refusal rules and name arithmetic, without a database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tenure_server.domain import errors
from tenure_server.domain.fences import Fence, verify_refusal
from tenure_server.domain.leases import Lease, acquire_refusal, release_outcome
from tenure_server.domain.limits import Limits
from tenure_server.domain.names import decode_cursor, encode_cursor, prefix_upper_bound
from tenure_server.domain.windows import Holding, Window, claim_refusal, complete_outcome

T = datetime(2026, 9, 25, 3, 5, tzinfo=UTC)
LEASE = Lease("l", "a", 3, 30.0, T, T, T, None, True, 30.0)
WINDOW = Window("j", "w", "l", "a", 3, 1, T, None)
MINE = Holding("l", "a", 3)
LIMITS = Limits(1, 3600, 60, 500, 100)


def test_acquire_refusal_names_the_holder_or_asks_to_retry() -> None:
    """Held by another: lease-held; free, expired or mine meanwhile: try the statement again."""
    refusal = acquire_refusal("l", "b", LEASE)
    assert isinstance(refusal, errors.LeaseHeld)
    assert refusal.holder == "a"
    assert acquire_refusal("l", "a", LEASE) is None
    assert acquire_refusal("l", "b", replace(LEASE, held=False)) is None
    assert acquire_refusal("l", "b", None) is None


def test_release_outcome() -> None:
    """Unknown lease: not found; other holding: lost; already released by me: the lease."""
    assert isinstance(release_outcome("l", "a", 3, None), errors.LeaseNotFound)
    assert isinstance(release_outcome("l", "a", 2, LEASE), errors.LeaseLost)
    assert isinstance(release_outcome("l", "b", 3, LEASE), errors.LeaseLost)
    released = replace(LEASE, released_at=T, held=False)
    assert release_outcome("l", "a", 3, released) == released
    assert release_outcome("l", "a", 3, LEASE) is None


@pytest.mark.parametrize(
    ("window", "held", "expected"),
    [
        (replace(WINDOW, completed_at=T), True, errors.WindowCompleted),
        (replace(WINDOW, completed_at=T), False, errors.WindowCompleted),
        (replace(WINDOW, lease="other"), True, errors.WindowLeaseMismatch),
        (WINDOW, False, errors.LeaseLost),
        (None, False, errors.LeaseLost),
        (replace(WINDOW, generation=4), True, errors.LeaseLost),
        (WINDOW, True, None),
        (None, True, None),
    ],
)
def test_claim_refusal(window: Window | None, held: bool, expected: type | None) -> None:
    """Completed first, then the lease binding, then the holding itself."""
    refusal = claim_refusal(MINE, window, held, "j", "w")
    assert refusal is None if expected is None else isinstance(refusal, expected)


@pytest.mark.parametrize(
    ("window", "held", "expected"),
    [
        (replace(WINDOW, completed_at=T), False, Window),
        (replace(WINDOW, completed_at=T, holder="b"), True, errors.WindowCompleted),
        (WINDOW, False, errors.LeaseLost),
        (None, True, errors.WindowNotClaimed),
        (replace(WINDOW, generation=2), True, errors.WindowNotClaimed),
        (WINDOW, True, None),
    ],
)
def test_complete_outcome(window: Window | None, held: bool, expected: type | None) -> None:
    """A repeated completion by the same holding succeeds; anything else explains itself."""
    outcome = complete_outcome(MINE, window, held, "j", "w")
    assert outcome is None if expected is None else isinstance(outcome, expected)


@pytest.mark.parametrize(
    ("fence", "current", "generation", "expected"),
    [
        (Fence("r", "other", 1, T), 5, 5, errors.FenceLeaseMismatch),
        (None, None, 1, errors.UnknownGeneration),
        (Fence("r", "l", 1, T), 3, 4, errors.UnknownGeneration),
        (Fence("r", "l", 4, T), 5, 3, errors.StaleGeneration),
        (Fence("r", "l", 3, T), 5, 4, None),
    ],
)
def test_verify_refusal(
    fence: Fence | None, current: int | None, generation: int, expected: type | None
) -> None:
    """Another lease, a forged generation, a stale one — each has its own refusal."""
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
