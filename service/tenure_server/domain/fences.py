"""A fence (the highest generation a resource has seen) and why a verify was refused."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)


@dataclass(frozen=True, slots=True)
class Fence:
    resource: str
    lease: str
    highest: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class LeaseGeneration:
    """A lease's current generation, and whether an operator moved it there (force-release or
    bump-generations), handing it to nobody."""

    generation: int
    forced: bool


def verify_refusal(
    resource: str,
    lease: str,
    generation: int,
    fence: Fence | None,
    current: LeaseGeneration | None,
) -> TenureError | None:
    """Why a verify did not advance the fence; None when the state moved meanwhile.

    A generation below the lease's current one is stale on every resource, fenced yet or not: a
    later holding (or a force-release, or a restore's bump) superseded it. One above it was never
    handed out, nor was the one an operator moved it to: accepting either would raise the fence
    past every real holder and lock the resource for everyone.
    """
    if fence is not None and fence.lease != lease:
        return FenceLeaseMismatch(resource, fence.lease)
    if current is None or generation > current.generation:
        return UnknownGeneration(lease, generation, None if current is None else current.generation)
    highest = max(current.generation, fence.highest if fence is not None else 0)
    if generation < highest:
        return StaleGeneration(resource, generation, highest)
    if current.forced:
        return UnknownGeneration(lease, generation, current.generation, forced=True)
    return None
