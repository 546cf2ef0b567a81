"""When a lease handle renews, and until when its lease surely holds: the monotonic-clock
bookkeeping behind `_lease`, without I/O (the tests drive it with made-up times).

The lease counts as held until `sent + ttl`, where `sent` is when the last successful acquire or
renew request was sent: the service set the expiry no earlier than that, so this deadline never
falls after the real one, however slow the answer was.
"""

from __future__ import annotations

import math
from typing import Literal

from tenure._errors import RateLimited, ServiceUnavailable, TenureError
from tenure._retry import RetryPolicy

__all__ = [
    "MIN_REQUEST_TIMEOUT",
    "RENEWALS_PER_TTL",
    "LeaseClock",
    "renewal_verdict",
    "retry_after",
]

RENEWALS_PER_TTL = 3
# Shortest timeout given to a renewal request near its deadline.
MIN_REQUEST_TIMEOUT = 0.05


class LeaseClock:
    """When to renew and until when the lease is surely held, on the monotonic clock. No I/O."""

    def __init__(self, ttl: float, renew_every: float | None = None) -> None:
        if not (math.isfinite(ttl) and ttl > 0):
            raise ValueError("ttl must be a positive number of seconds")
        interval = ttl / RENEWALS_PER_TTL if renew_every is None else renew_every
        if not (math.isfinite(interval) and 0 < interval < ttl):
            raise ValueError("renew_every must be more than 0 and less than the ttl")
        self.ttl = ttl
        self.interval = interval
        self.last_sent = -math.inf
        self.deadline = -math.inf  # the lease may have expired from this instant on

    def acquired(self, sent_at: float) -> None:
        self.last_sent = sent_at
        self.deadline = sent_at + self.ttl

    def renewed(self, sent_at: float, answered_at: float) -> bool:
        """Count a successful renewal; False if it was answered too late to count."""
        if answered_at >= self.deadline:
            return False
        self.last_sent = max(self.last_sent, sent_at)
        self.deadline = max(self.deadline, sent_at + self.ttl)
        return True

    def expired(self, now: float) -> bool:
        return now >= self.deadline

    def next_renewal(self) -> float:
        return self.last_sent + self.interval

    def retry_at(
        self, now: float, failures: int, policy: RetryPolicy, retry_after: float | None = None
    ) -> float:
        """When to try a failed renewal again: backoff, or the service's Retry-After if longer,
        but never less often than the interval."""
        return now + min(max(policy.delay(failures), retry_after or 0.0), self.interval)

    def request_timeout(self, now: float, default: float) -> float:
        """A renewal must not outlive the deadline: past it the answer no longer counts."""
        return max(MIN_REQUEST_TIMEOUT, min(default, self.deadline - now))


def renewal_verdict(error: TenureError) -> Literal["lost", "retry"]:
    """A failed renewal: try again (no answer, the service failed, or it asked the caller to
    slow down: a rate limit says nothing about the holding) or give up (it refused)."""
    if error.status is None or error.status >= 500 or isinstance(error, RateLimited):
        return "retry"
    return "lost"


def retry_after(error: TenureError) -> float | None:
    """The seconds the service asked a failed renewal to wait, if it said."""
    if isinstance(error, (RateLimited, ServiceUnavailable)):
        return error.retry_after
    return None
