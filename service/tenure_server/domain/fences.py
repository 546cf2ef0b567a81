"""A fence (the highest generation a resource has seen) and why a verify was refused."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)


class Fence(NamedTuple):
    """A resource's fence. A named tuple, as Lease is: a batch verify builds hundreds, and a
    frozen dataclass is more than twice as slow to build."""

    resource: str
    lease: str
    highest: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class VerifyFacts:
    """What the explaining read (explain_fences) found after a verify was refused, each fact
    decided in SQL by the migration functions the deciding statement called (tenure_may_verify_v1,
    tenure_fence_accepts_v1), so that nothing here restates a rule."""

    fence: Fence | None  # None: the resource has no fence yet
    lease_generation: int | None  # the lease's current generation; None: no such lease
    accepted: bool  # the whole decision: the verify would pass now
    bound_elsewhere: bool  # the fence is another lease's
    unknown: bool  # no such lease, or a generation above its current one
    stale: bool  # below the lease's current generation or the fence's highest
    highest: int | None  # the higher of those two
    forced: bool  # the lease's current generation is one an operator moved it to


def verify_refusal(
    resource: str, lease: str, generation: int, facts: VerifyFacts
) -> TenureError | None:
    """Why a verify did not advance the fence; None when it would pass now (the state moved
    meanwhile: decide again).

    A generation below the lease's current one is stale on every resource, fenced yet or not: a
    later holding (or a force-release, or a restore's bump) superseded it. One above it was never
    handed out, nor was the one an operator moved it to: accepting either would raise the fence
    past every real holder and lock the resource for everyone.
    """
    if facts.accepted:
        return None
    if facts.fence is not None and facts.bound_elsewhere:
        return FenceLeaseMismatch(resource, facts.fence.lease)
    if facts.unknown:
        return UnknownGeneration(lease, generation, facts.lease_generation)
    if facts.stale and facts.highest is not None:
        return StaleGeneration(resource, generation, facts.highest)
    if facts.forced and facts.lease_generation is not None:
        return UnknownGeneration(lease, generation, facts.lease_generation, forced=True)
    return None
