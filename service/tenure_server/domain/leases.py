"""A lease as the database last reported it, and why an acquire or release did not go through."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class HoldingFacts:
    """What the explaining read (explain_holding) found about the lease and the holding a
    refused acquire, renew or release named, each fact decided in SQL by the migration function
    the deciding statement called, so that nothing here restates a rule."""

    lease: Lease | None  # None: no such lease
    exhausted_at: int | None  # the generation none may follow (of the lease, or of the floor)
    may_acquire: bool  # tenure_may_acquire_v2: an acquire would pass now
    holds: bool  # tenure_holds_v1: the holding named is the current one
    named: bool  # tenure_holding_named_v1: the holding named is the lease's latest
    foreign: bool  # named, but bound to another principal (tenure_bound_to_v1)
    may_release: bool  # tenure_may_release_v1: the release would pass now


def acquire_refusal(name: str, facts: HoldingFacts) -> LeaseHeld | GenerationExhausted | None:
    """Why an acquire that changed nothing was refused; None when it would pass now (the state
    moved meanwhile: decide again).

    The acquire statement decides atomically; this only explains its answer from a later read.
    A held lease names its holder; a free one is refused only when no generation is left to
    begin a holding with (`exhausted_at`).
    """
    current = facts.lease
    if facts.may_acquire:
        return None
    if current is not None and current.held:
        return LeaseHeld(name, current.holder, current.expires_at, current.expires_in_seconds)
    if facts.exhausted_at is not None:
        return GenerationExhausted(name, facts.exhausted_at, first=current is None)
    return None


def force_release_refusal(
    name: str, facts: HoldingFacts
) -> LeaseNotFound | GenerationExhausted | None:
    """Why a force-release changed nothing: no such lease, or no generation left to move it to;
    None when the state moved meanwhile (a lease inserted since)."""
    if facts.lease is None:
        return LeaseNotFound(name)
    if facts.exhausted_at is not None:
        return GenerationExhausted(name, facts.exhausted_at)
    return None


def renew_refusal(
    name: str, generation: int, facts: HoldingFacts
) -> LeaseLost | HoldingOfAnotherPrincipal:
    """A renewal that changed nothing: the holding is gone, or it belongs to another principal.
    Never decided again: the refusal is already recorded (renew_refused)."""
    if facts.foreign:
        return HoldingOfAnotherPrincipal(name)
    return LeaseLost(name, generation)


def release_outcome(
    name: str, generation: int, facts: HoldingFacts
) -> Lease | LeaseLost | LeaseNotFound | HoldingOfAnotherPrincipal | None:
    """The answer to a release that updated no row.

    Releasing again what this holding already released is answered with the lease as it is, so a
    client retrying after a lost response sees success. A release naming a grant older than the
    holding's latest (the holder was granted it again after sending the release) ends nothing:
    lease-lost, as for any holding the release does not name. None: the release would pass now
    (the state moved), decide again.
    """
    current = facts.lease
    if current is None:
        return LeaseNotFound(name)
    if not facts.named:
        return LeaseLost(name, generation)
    if facts.foreign:
        return HoldingOfAnotherPrincipal(name)
    if current.released_at is not None:
        return current
    if facts.may_release:
        return None
    return LeaseLost(name, generation)
