"""Bounds on what callers may ask for, and the checks that enforce them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tenure_server.domain.errors import InvalidInput

# Seconds before its occurrence a window may be resolved or claimed, by the database clock: a
# scheduler firing a hair early still runs the occurrence it was about to run.
DEFAULT_MAX_EARLY_TOLERANCE = 30.0


@dataclass(frozen=True)
class Limits:
    min_ttl_seconds: float
    max_ttl_seconds: float
    max_wait_seconds: float
    max_page_size: int
    default_page_size: int
    max_batch_size: int
    max_early_tolerance_seconds: float = DEFAULT_MAX_EARLY_TOLERANCE

    def ttl(self, ttl_seconds: float) -> float:
        """A TTL within bounds: no lease may be eternal, none so short it flaps."""
        if not math.isfinite(ttl_seconds) or not (
            self.min_ttl_seconds <= ttl_seconds <= self.max_ttl_seconds
        ):
            raise InvalidInput(
                "ttl_seconds",
                f"must be between {self.min_ttl_seconds:g} and {self.max_ttl_seconds:g} seconds",
            )
        return ttl_seconds

    def wait(self, wait_seconds: float) -> float:
        if not math.isfinite(wait_seconds) or not (0 <= wait_seconds <= self.max_wait_seconds):
            raise InvalidInput(
                "wait_seconds", f"must be between 0 and {self.max_wait_seconds:g} seconds"
            )
        return wait_seconds

    def early_tolerance(self, seconds: float) -> float:
        """An early tolerance within bounds: a longer one would let a window be resolved that
        the claim of a registered job refuses."""
        if not math.isfinite(seconds) or not (0 <= seconds <= self.max_early_tolerance_seconds):
            raise InvalidInput(
                "early_tolerance_seconds",
                f"must be between 0 and {self.max_early_tolerance_seconds:g} seconds",
            )
        return seconds

    def batch(self, names: Sequence[str], field: str = "leases", item: str = "lease") -> None:
        """A batch (of leases, or of resources to verify): within the size bound, each `item`
        once."""
        if len(names) > self.max_batch_size:
            raise InvalidInput(field, f"at most {self.max_batch_size} per request")
        if len(set(names)) != len(names):
            raise InvalidInput(field, f"each {item} may appear once")

    def page_size(self, limit: int | None) -> int:
        if limit is None:
            return self.default_page_size
        if not (1 <= limit <= self.max_page_size):
            raise InvalidInput("limit", f"must be between 1 and {self.max_page_size}")
        return limit
