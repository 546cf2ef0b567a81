"""What a use case asks of the store, one request at a time, and what the store answers: the
types of the ports (`app/ports.py`) that the repository (`db/`) runs. Each request's fields are in
its statement's $n order, as the batch statements take their arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tenure_server.domain.events import LeaseEvent
from tenure_server.domain.leases import Lease


@dataclass(frozen=True, slots=True)
class Acquire:
    """One acquire request, as acquire_lease takes it: fields in its $n order, as
    acquire_leases takes their arrays."""

    name: str
    holder: str
    ttl: float
    principal: str | None


@dataclass(frozen=True, slots=True)
class Renew:
    """One renew request, as renew_lease takes it: fields in its $n order, as renew_coalesced
    takes their arrays."""

    name: str
    holder: str
    generation: int
    ttl: float
    principal: str | None


@dataclass(frozen=True, slots=True)
class Release:
    """One release request, as release_lease takes it: fields in its $n order, as
    release_coalesced takes their arrays."""

    name: str
    holder: str
    generation: int
    principal: str | None
    grant: str


# The lease, and the event when the acquire began a new holding (None: it extended one).
Acquired = tuple[Lease, LeaseEvent | None]
# The lease a release released, and what the waiter it was handed over to acquired.
HandedOver = tuple[Lease, Acquired]
# The lease a force-release moved, and its event.
ForceReleased = tuple[Lease, LeaseEvent]


class Verify(NamedTuple):
    """One verify of a fence, as verify_fence takes it: fields in its $n order, as
    verify_fences takes their arrays. A named tuple, as `Lease` is: a batch verify builds
    hundreds (0.25 µs each instead of a frozen dataclass's 0.5)."""

    resource: str
    lease: str
    generation: int

    @property
    def name(self) -> str:
        """What two verifies in one statement must not share: the fence."""
        return self.resource
