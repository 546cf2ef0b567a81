"""A token bucket per principal: `rate` requests a second on average, bursts up to `burst`."""

from __future__ import annotations

from collections.abc import Callable

from tenure_server.domain.errors import RateLimited


class RateLimiter:
    """In-process: each service process counts its own requests (document per-replica rates)."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        # Principals come from configuration, so this mapping stays small.
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, principal: str) -> None:
        """Spend one request from the principal's bucket, or raise RateLimited."""
        now = self._clock()
        tokens, last = self._buckets.get(principal, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._rate)
        if tokens < 1:
            self._buckets[principal] = (tokens, now)
            raise RateLimited(principal, (1 - tokens) / self._rate)
        self._buckets[principal] = (tokens - 1, now)
