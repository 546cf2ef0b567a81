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


def verify_refusal(
    resource: str,
    lease: str,
    generation: int,
    fence: Fence | None,
    lease_generation: int | None,
) -> TenureError | None:
    """Why a verify did not advance the fence; None when the state moved meanwhile.

    A generation above the lease's current one was never handed out: accepting it would raise the
    fence past every real holder and lock the resource for everyone, so it is refused.
    """
    if fence is not None and fence.lease != lease:
        return FenceLeaseMismatch(resource, fence.lease)
    if lease_generation is None or generation > lease_generation:
        return UnknownGeneration(lease, generation, lease_generation)
    if fence is not None and fence.highest > generation:
        return StaleGeneration(resource, generation, fence.highest)
    return None
