"""A lease as the database last reported it, and why an acquire or release did not go through."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from tenure_server.domain.errors import (
    GenerationExhausted,
    HoldingOfAnotherPrincipal,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
)


class Lease(NamedTuple):
    """One named lease. `held` and `expires_in_seconds` are by the database clock. A named tuple,
    not a dataclass: a batch renew builds hundreds, and a frozen dataclass of twelve fields is
    several times slower to build (bench/README.md, step 14)."""

    name: str
    holder: str
    generation: int
    ttl_seconds: float
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    released_at: datetime | None
    principal: str | None  # who acquired it; None without authentication
    grant_id: str | None  # the latest acquire or renew of this holding (a transaction id)
    held: bool
    expires_in_seconds: float


def acquire_refusal(
    name: str, holder: str, principal: str | None, current: Lease | None, exhausted_at: int | None
) -> LeaseHeld | GenerationExhausted | None:
    """Why an acquire that changed nothing was refused; None when the state moved meanwhile.

    The acquire statement decides atomically; this only explains its answer from a later read
    (explain_acquire), so a lease that expired or was released in between means "try the
    statement again". The same holder string under another principal is another holder. A free
    lease is refused only when no generation is left to begin a holding with (`exhausted_at`, the
    generation that none may follow, of the lease or of the floor for a name without a row).
    """
    if current is not None and current.held:
        if current.holder == holder and current.principal == principal:
            return None
        return LeaseHeld(name, current.holder, current.expires_at, current.expires_in_seconds)
    if exhausted_at is not None:
        return GenerationExhausted(name, exhausted_at, first=current is None)
    return None


def force_release_refusal(
    name: str, current: Lease | None, exhausted_at: int | None
) -> LeaseNotFound | GenerationExhausted | None:
    """Why a force-release changed nothing: no such lease, or no generation left to move it to;
    None when the state moved meanwhile (a lease inserted since)."""
    if current is None:
        return LeaseNotFound(name)
    if exhausted_at is not None:
        return GenerationExhausted(name, exhausted_at)
    return None


def renew_refusal(
    name: str, holder: str, generation: int, principal: str | None, current: Lease | None
) -> LeaseLost | HoldingOfAnotherPrincipal:
    """A renewal that changed nothing: the holding is gone, or it belongs to another principal."""
    if _foreign(holder, generation, principal, current):
        return HoldingOfAnotherPrincipal(name)
    return LeaseLost(name, generation)


def release_outcome(
    name: str,
    holder: str,
    generation: int,
    principal: str | None,
    current: Lease | None,
    grant: str,
) -> Lease | LeaseLost | LeaseNotFound | HoldingOfAnotherPrincipal | None:
    """The answer to a release that updated no row.

    Releasing again what this holding already released is answered with the lease as it is, so a
    client retrying after a lost response sees success. A release naming a grant older than the
    holding's latest (the holder was granted it again after sending the release) ends nothing:
    lease-lost, as for any holding the release does not name. None: the state moved, try again.
    """
    if current is None:
        return LeaseNotFound(name)
    if current.holder != holder or current.generation != generation:
        return LeaseLost(name, generation)
    if _foreign(holder, generation, principal, current):
        return HoldingOfAnotherPrincipal(name)
    if current.released_at is not None:
        return current
    if current.grant_id != grant:
        return LeaseLost(name, generation)
    return None


def _foreign(holder: str, generation: int, principal: str | None, current: Lease | None) -> bool:
    """The holding named exists but was acquired by another principal."""
    return (
        current is not None
        and current.holder == holder
        and current.generation == generation
        and current.principal != principal
    )
