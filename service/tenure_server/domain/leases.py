"""A lease as the database last reported it, and why an acquire or release did not go through."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tenure_server.domain.errors import LeaseHeld, LeaseLost, LeaseNotFound


@dataclass(frozen=True, slots=True)
class Lease:
    """One named lease. `held` and `expires_in_seconds` are by the database clock."""

    name: str
    holder: str
    generation: int
    ttl_seconds: float
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    released_at: datetime | None
    held: bool
    expires_in_seconds: float


def acquire_refusal(name: str, holder: str, current: Lease | None) -> LeaseHeld | None:
    """Why an acquire that changed nothing was refused; None when the state moved meanwhile.

    The acquire statement decides atomically; this only explains its answer from a later read,
    so a lease that expired or was released in between means "try the statement again".
    """
    if current is None or not current.held or current.holder == holder:
        return None
    return LeaseHeld(name, current.holder, current.expires_at, current.expires_in_seconds)


def release_outcome(
    name: str, holder: str, generation: int, current: Lease | None
) -> Lease | LeaseLost | LeaseNotFound | None:
    """The answer to a release that updated no row.

    Releasing again what this holding already released is answered with the lease as it is, so a
    client retrying after a lost response sees success. None: the state moved, try again.
    """
    if current is None:
        return LeaseNotFound(name)
    if current.holder != holder or current.generation != generation:
        return LeaseLost(name, generation)
    if current.released_at is not None:
        return current
    return None
