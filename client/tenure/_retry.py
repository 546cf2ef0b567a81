"""Which failures are retried, and after how long: pure functions of the outcome of a try.

What is retried: a request that got no answer (connection refused or reset, timeout) and a
502/503/504. Every operation of the API v1 is safe to repeat: acquire is idempotent per holder (the
same holder acquiring again gets the same generation back, so a retried acquire cannot create a
second generation), renew/release/complete repeat to the same result, claim only counts one more
attempt, and verify accepts an equal generation. What is never retried: any other 4xx — a 409
is an answer ("held", "lost", "completed"), and asking again cannot change it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from tenure._errors import ServiceUnavailable, TenureError, TransportError

__all__ = ["DEFAULT_RETRY", "NO_RETRY", "RETRYABLE_STATUSES", "RetryPolicy", "retry_delay"]

RETRYABLE_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Up to `attempts` tries in all, with jittered exponential backoff between them.

    The n-th delay is drawn from [c/2, c] with c = min(max_backoff, backoff * 2**(n-1)) ("equal
    jitter": spread out, yet never close to zero). A `Retry-After` from the service raises the
    delay to that many seconds, still capped at `max_backoff`.
    """

    attempts: int = 4
    backoff: float = 0.2
    max_backoff: float = 5.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if not (math.isfinite(self.backoff) and self.backoff >= 0):
            raise ValueError("backoff must be a finite number of seconds >= 0")
        if not (math.isfinite(self.max_backoff) and self.max_backoff >= self.backoff):
            raise ValueError("max_backoff must be finite and at least backoff")

    @staticmethod
    def retryable(status: int | None) -> bool:
        """Whether an outcome may be retried: None (no answer) or 502/503/504."""
        return status is None or status in RETRYABLE_STATUSES

    def delay(
        self,
        failures: int,
        *,
        retry_after: float | None = None,
        draw: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to sleep after `failures` failed tries (1 for the first failure)."""
        ceiling = min(self.max_backoff, self.backoff * 2.0 ** max(0, failures - 1))
        seconds = ceiling / 2 + draw() * ceiling / 2
        if retry_after is not None and math.isfinite(retry_after):
            seconds = max(seconds, min(max(retry_after, 0.0), self.max_backoff))
        return seconds

    def next_delay(
        self,
        failures: int,
        status: int | None,
        *,
        retry_after: float | None = None,
        draw: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to sleep before trying again, or None to give up and raise."""
        if failures >= self.attempts or not self.retryable(status):
            return None
        return self.delay(failures, retry_after=retry_after, draw=draw)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)


def retry_delay(
    policy: RetryPolicy,
    failures: int,
    error: TenureError,
    draw: Callable[[], float] = random.random,
) -> float | None:
    """Seconds to sleep before sending again after `error`, or None to raise it.

    Only a request without answer (`TransportError`) or one answered 502/503/504 is retried;
    a 409 or any other 4xx is the service's answer and is raised at once.
    """
    if isinstance(error, TransportError):
        return policy.next_delay(failures, None, draw=draw)
    if error.status is None:  # raised locally, not by an answer
        return None
    after = error.retry_after if isinstance(error, ServiceUnavailable) else None
    return policy.next_delay(failures, error.status, retry_after=after, draw=draw)
