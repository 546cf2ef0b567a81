"""Client decisions as pure functions: which failures are retried and after how long, how a long
wait is split, and when a lease handle must consider its lease lost. Time is passed in."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from tenure import (
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
    TenureError,
    TransportError,
    UnexpectedResponse,
    WindowCompleted,
)
from tenure._protocol import WaitPlan
from tenure._renewal import LeaseClock, renewal_verdict
from tenure._retry import retry_delay
from tenure._supervisor import child_exit_code

POLICY = RetryPolicy(attempts=4, backoff=0.2, max_backoff=1.0)
NOW = datetime(2026, 9, 25, tzinfo=UTC)


@pytest.mark.parametrize("status", [None, 502, 503, 504])
def test_no_answer_and_gateway_errors_are_retried(status: int | None) -> None:
    """A request without answer and a 502/503/504 are retried."""
    assert POLICY.retryable(status)
    assert POLICY.next_delay(1, status) is not None


@pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 409, 422, 429, 500, 501])
def test_other_statuses_are_never_retried(status: int) -> None:
    """A 409 (or any other answer) is final: asking again cannot change it."""
    assert not POLICY.retryable(status)
    assert POLICY.next_delay(1, status) is None


def test_attempts_bound_the_tries() -> None:
    """`attempts` counts every try: after that many failures the error is raised."""
    assert POLICY.next_delay(3, None) is not None
    assert POLICY.next_delay(4, None) is None
    assert RetryPolicy(attempts=1).next_delay(1, None) is None


def test_backoff_doubles_within_jitter_and_is_capped() -> None:
    """The n-th delay lies in [c/2, c], c = min(max_backoff, backoff * 2**(n-1))."""
    for failures, ceiling in [(1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (9, 1.0)]:
        assert POLICY.delay(failures, draw=lambda: 0.0) == pytest.approx(ceiling / 2)
        assert POLICY.delay(failures, draw=lambda: 1.0) == pytest.approx(ceiling)


def test_retry_after_raises_the_delay_up_to_the_cap() -> None:
    """The service's Retry-After is honoured, but never beyond max_backoff."""
    assert POLICY.delay(1, retry_after=0.7, draw=lambda: 0.0) == pytest.approx(0.7)
    assert POLICY.delay(1, retry_after=30, draw=lambda: 0.0) == pytest.approx(1.0)


def test_policy_refuses_nonsense() -> None:
    """A policy with no tries or a negative backoff is refused at construction."""
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="backoff"):
        RetryPolicy(backoff=-1)
    with pytest.raises(ValueError, match="max_backoff"):
        RetryPolicy(backoff=2, max_backoff=1)


def _held() -> LeaseHeld:
    return LeaseHeld("held", holder="b", expires_at=NOW, retry_after=3.0)


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (TransportError("connection refused"), True),
        (ServiceUnavailable("db down", retry_after=0.5), True),
        (ServiceUnavailable("bad gateway", status=502), True),
        (_held(), False),
        (LeaseLost("lost", generation=3), False),
        (WindowCompleted("done", completed_at=NOW), False),
        (InvalidRequest("bad ttl"), False),
        (UnexpectedResponse("garbage", status=200), False),
        (TenureError("internal", status=500), False),
        (LeaseLost("decided locally", status=None), False),
    ],
)
def test_retry_decision_for_each_error(error: TenureError, retried: bool) -> None:
    """Only errors without answer and 502/503/504 are retried; 409s and local errors never."""
    assert (retry_delay(POLICY, 1, error, draw=lambda: 0.5) is not None) is retried


def test_wait_plan_splits_a_long_wait_and_stops_at_the_deadline() -> None:
    """A wait is sent as chunks of at most max_chunk seconds, none past the deadline."""
    plan = WaitPlan(deadline=100.0, max_chunk=30.0)
    assert plan.chunk(0.0) == 30.0
    assert plan.chunk(85.0) == 15.0
    assert plan.chunk(100.0) == 0.0
    assert plan.pause_after_held(sent_at=0.0, asked=30.0, now=30.0) == 0.0
    assert plan.pause_after_held(sent_at=0.0, asked=30.0, now=0.5) == pytest.approx(0.1)
    assert plan.pause_after_held(sent_at=70.0, asked=30.0, now=100.0) is None
    assert WaitPlan(deadline=5.0, max_chunk=30.0).pause_after_held(5.0, 0.0, 5.0) is None


def test_lease_clock_counts_the_ttl_from_when_the_request_was_sent() -> None:
    """The local deadline is send time + TTL, whatever the time the answer arrived."""
    clock = LeaseClock(ttl=9.0)
    assert clock.interval == 3.0
    clock.acquired(sent_at=100.0)
    assert clock.deadline == 109.0
    assert clock.next_renewal() == 103.0
    assert clock.renewed(sent_at=103.0, answered_at=108.9)  # slow answer: counted from 103
    assert clock.deadline == 112.0
    assert not clock.expired(111.99)
    assert clock.expired(112.0)


def test_an_answer_after_the_deadline_does_not_revive_the_lease() -> None:
    """A renewal answered after the local deadline leaves the lease counted as lost."""
    clock = LeaseClock(ttl=3.0, renew_every=1.0)
    clock.acquired(sent_at=0.0)
    assert not clock.renewed(sent_at=2.9, answered_at=3.0)
    assert clock.deadline == 3.0


def test_failed_renewals_are_retried_at_least_every_interval_and_time_out_at_the_deadline() -> None:
    """Retry delays never exceed the renewal interval; requests never outlive the deadline."""
    clock = LeaseClock(ttl=3.0)
    clock.acquired(sent_at=0.0)
    slow = RetryPolicy(backoff=10, max_backoff=10)
    assert clock.retry_at(1.0, 5, slow) == pytest.approx(2.0)
    assert clock.request_timeout(2.5, default=10.0) == pytest.approx(0.5)
    assert clock.request_timeout(2.99, default=10.0) == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("ttl", "every"), [(0, None), (-1, None), (math.inf, None), (3, 3), (3, 0)]
)
def test_lease_clock_refuses_nonsense(ttl: float, every: float | None) -> None:
    """A TTL must be positive and finite, and renewals must come before it runs out."""
    with pytest.raises(ValueError, match="ttl"):
        LeaseClock(ttl, every)


@pytest.mark.parametrize(
    ("error", "verdict"),
    [
        (TransportError("timeout"), "retry"),
        (ServiceUnavailable("db down"), "retry"),
        (TenureError("internal", status=500), "retry"),
        (RateLimited("slow down", retry_after=0.3), "retry"),
        (LeaseLost("taken over", generation=2), "lost"),
        (InvalidRequest("bad"), "lost"),
    ],
)
def test_renewal_verdict(error: TenureError, verdict: str) -> None:
    """A renewal without answer, or refused for the caller's rate, is retried until the
    deadline; a refusal of the holding means the lease is lost."""
    assert renewal_verdict(error) == verdict


def test_a_failed_renewal_waits_the_retry_after_within_the_interval() -> None:
    """The service's Retry-After lengthens the backoff, but a retry still comes within the
    renewal interval."""
    clock = LeaseClock(ttl=3.0)
    clock.acquired(sent_at=0.0)
    quick = RetryPolicy(backoff=0.01, max_backoff=0.01)
    assert clock.retry_at(1.0, 1, quick, retry_after=0.5) == pytest.approx(1.5)
    assert clock.retry_at(1.0, 1, quick, retry_after=30.0) == pytest.approx(2.0)
    assert clock.retry_at(1.0, 1, quick, retry_after=None) <= 1.01


def test_child_exit_code_follows_the_shell() -> None:
    """`tenure run` exits with the command's status, 128 + N when it was killed by signal N."""
    assert child_exit_code(0) == 0
    assert child_exit_code(3) == 3
    assert child_exit_code(-15) == 143
    assert child_exit_code(-9) == 137
