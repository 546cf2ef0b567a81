"""Domain errors. Each names the condition and carries its facts; none knows about HTTP.

TenureError
├── InvalidInput            a value outside its documented bounds
├── Unauthenticated         no valid token
├── Forbidden               the principal may not do this here
│   ├── HoldingOfAnotherPrincipal  the right holder and generation, the wrong principal
│   └── ReservedName        a name only the service itself acts under
├── RateLimited             the principal sends faster than its configured rate
├── LeaseHeld               another holder holds the lease
├── LeaseLost               the caller no longer holds the lease it names
├── LeaseNotFound
├── GenerationExhausted     no generation is left to begin a holding with
├── WindowNotFound
├── JobNotFound             no job is registered under the name
├── WindowCompleted         the occurrence already ran to completion
├── WindowNotClaimed        completing a window this holding did not claim
├── WindowLeaseMismatch     the window is bound to another lease
├── WindowNotDue            the window's occurrence is still ahead of the database clock
├── StaleGeneration         a fence has seen a higher generation
├── FenceLeaseMismatch      the resource is fenced by another lease
├── UnknownGeneration       a generation the lease never handed out
├── RequestAbandoned        the caller went away while waiting for a lease
├── ShuttingDown            this process is draining: retry on another replica
├── TooManyStreams          the process's event streams, or the principal's there, are full
└── StorageUnavailable      the database is unreachable or asked us to retry
"""

from __future__ import annotations

from datetime import datetime

from tenure import MAX_GENERATION


class TenureError(Exception):
    """Base of every refusal the service can explain to its caller."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidInput(TenureError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Unauthenticated(TenureError):
    def __init__(self, detail: str = "a valid bearer token is required") -> None:
        super().__init__(detail)


class Forbidden(TenureError):
    def __init__(self, principal: str, action: str, name: str | None = None) -> None:
        where = "" if name is None else f" on {name!r}"
        super().__init__(f"principal {principal!r} may not {action}{where}")


class HoldingOfAnotherPrincipal(Forbidden):
    def __init__(self, name: str) -> None:
        TenureError.__init__(self, f"the holding of {name!r} belongs to another principal")


class ReservedName(Forbidden):
    def __init__(self, name: str, action: str, namespace: str) -> None:
        TenureError.__init__(
            self,
            f"{name!r} is reserved to the service (every name under {namespace!r} is): "
            f"no caller may {action} under it",
        )
        self.name = name


class RateLimited(TenureError):
    def __init__(self, principal: str, retry_after_seconds: float) -> None:
        super().__init__(f"principal {principal!r} is over its request rate")
        self.retry_after_seconds = retry_after_seconds


class LeaseHeld(TenureError):
    def __init__(self, name: str, holder: str, expires_at: datetime, retry_after: float) -> None:
        super().__init__(f"lease {name!r} is held by another holder")
        self.holder = holder
        self.expires_at = expires_at
        self.retry_after_seconds = retry_after


class LeaseLost(TenureError):
    def __init__(self, name: str, generation: int) -> None:
        super().__init__(
            f"lease {name!r} generation {generation} is not held by this holder"
            " (expired, released, or taken over)"
        )
        self.generation = generation


class LeaseNotFound(TenureError):
    def __init__(self, name: str) -> None:
        super().__init__(f"lease {name!r} does not exist")


class GenerationExhausted(TenureError):
    """The lease's generation (`first`: for a name never acquired, the generation floor it would
    start above) is the largest handed out: no holding can follow it."""

    def __init__(self, name: str, generation: int, *, first: bool = False) -> None:
        where = (
            f"a first holding of lease {name!r} would start above the generation floor"
            if first
            else f"lease {name!r} is at generation"
        )
        super().__init__(
            f"{where} {generation}, and Tenure hands out no generation past {MAX_GENERATION}"
            " (2**53 - 1, the largest integer JSON readers such as JavaScript read exactly)"
        )
        self.generation = generation


class WindowNotFound(TenureError):
    def __init__(self, job: str, window: str) -> None:
        super().__init__(f"job {job!r} has no window {window!r}")


class JobNotFound(TenureError):
    def __init__(self, job: str) -> None:
        super().__init__(f"no job {job!r} is registered")


class WindowCompleted(TenureError):
    def __init__(self, job: str, window: str, completed_at: datetime) -> None:
        super().__init__(f"window {window!r} of job {job!r} is already completed")
        self.completed_at = completed_at


class WindowNotClaimed(TenureError):
    def __init__(self, job: str, window: str) -> None:
        super().__init__(
            f"window {window!r} of job {job!r} is not claimed by this holder and generation"
        )


class WindowLeaseMismatch(TenureError):
    def __init__(self, job: str, window: str, lease: str) -> None:
        super().__init__(f"window {window!r} of job {job!r} is bound to lease {lease!r}")
        self.lease = lease


class WindowNotDue(TenureError):
    def __init__(
        self, job: str, window: str, occurrence: datetime, now: datetime, tolerance: float
    ) -> None:
        ahead = (occurrence - now).total_seconds()
        super().__init__(
            f"window {window!r} of job {job!r} is not due: its occurrence"
            f" {occurrence.isoformat()} is {ahead:.0f} s after the database clock"
            f" ({now.isoformat()}), more than the early tolerance of {tolerance:g} s"
        )
        self.occurrence = occurrence
        self.now = now


class StaleGeneration(TenureError):
    def __init__(self, resource: str, generation: int, highest: int) -> None:
        super().__init__(
            f"generation {generation} is lower than {highest}, the highest seen by {resource!r} "
            "or handed out by its lease"
        )
        self.highest = highest


class FenceLeaseMismatch(TenureError):
    def __init__(self, resource: str, lease: str) -> None:
        super().__init__(f"resource {resource!r} is fenced by lease {lease!r}")
        self.lease = lease


class UnknownGeneration(TenureError):
    def __init__(
        self, lease: str, generation: int, current: int | None, *, forced: bool = False
    ) -> None:
        super().__init__(
            f"lease {lease!r} never handed out generation {generation}"
            + (
                ": an operator moved the lease to it (force-release, bump-generations) and no"
                " holder has held it"
                if forced
                else ("" if current is None else f" (its current generation is {current})")
            )
        )
        self.current = current


class RequestAbandoned(TenureError):
    def __init__(self, name: str) -> None:
        super().__init__(f"the caller stopped waiting for lease {name!r}")


class ShuttingDown(TenureError):
    def __init__(self) -> None:
        super().__init__("this service process is shutting down; retry (another replica)")
        self.retry_after_seconds = 1


class TooManyStreams(TenureError):
    """This process serves its most event streams already, in all (`principal` None) or for
    this principal; another replica, or later, may not."""

    def __init__(self, limit: int, principal: str | None = None) -> None:
        whose = "" if principal is None else f" for principal {principal!r}"
        super().__init__(f"this process serves {limit} event streams{whose} already; retry later")
        self.limit = limit
        self.per = "process" if principal is None else "principal"
        self.retry_after_seconds = 5


class StorageUnavailable(TenureError):
    """The database is unreachable, too slow, or asked for the transaction to be retried."""

    def __init__(self, detail: str, retry_after_seconds: int = 1) -> None:
        super().__init__(detail)
        self.retry_after_seconds = retry_after_seconds
