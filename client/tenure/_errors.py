"""The client's exceptions: one per problem `type` the service answers, under one base class.

The types and their statuses are those of the catalogue the service answers from,
`tenure.problems`: an exception's default `status` is its type's.

TenureError                  anything the service refused, or could not be asked
├── TransportError           no answer: connection refused or reset, timeout, DNS, TLS
├── ServiceUnavailable       503 `storage-unavailable` (or a 502/503/504 from a proxy)
├── UnexpectedResponse       an answer this client cannot read (not JSON, missing fields)
├── ShuttingDown             503 `shutting-down`: the replica is draining; retried like 503
├── TooManyStreams           503 `too-many-streams`: .limit, .per (`process` or `principal`)
├── InvalidRequest           422 `validation-error`: .errors lists the fields and messages
├── Unauthenticated          401 `unauthenticated`: no token, or not a valid one
├── Forbidden                403 `forbidden`: the principal's role or namespaces do not allow it
│   ├── HoldingOfAnotherPrincipal  403: right holder and generation, another principal's holding
│   └── ReservedName         403 `reserved-name`: a `tenure.` name, the service's own
├── RateLimited              429 `rate-limited`: .retry_after
├── PayloadTooLarge          413 `payload-too-large`
├── LeaseHeld                409 `lease-held`: .holder, .expires_at, .retry_after
├── LeaseLost                409 `lease-lost`: this holding is gone (expired, released, taken)
├── LeaseNotFound            404 `lease-not-found`
├── GenerationExhausted      409 `generation-exhausted`: .generation, past which none is handed out
├── WindowNotFound           404 `window-not-found`
├── JobNotFound              404 `job-not-found`: no job is registered under the name
├── WindowCompleted          409 `window-completed`: .completed_at; a late run should skip
├── WindowNotClaimed         409 `window-not-claimed`
├── WindowLeaseMismatch      409 `window-lease-mismatch`: .lease the window is bound to
├── WindowNotDue             409 `window-not-due`: .occurrence still ahead of the service's .now
├── StaleGeneration          409 `stale-generation`: .highest the resource has accepted
├── FenceLeaseMismatch       409 `fence-lease-mismatch`: .lease that fences the resource
└── UnknownGeneration        422 `unknown-generation`: .current_generation of the lease

A problem `type` this client does not know is raised as `TenureError` itself; `.problem` holds
the decoded body and `.status` the HTTP status, so nothing the service said is lost.

`LeaseLost` is also raised locally, by a lease handle, when renewals failed for so long that the
lease may have expired: the client cannot prove it still holds it, so it acts as if it did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tenure.problems import ProblemType

__all__ = [
    "FenceLeaseMismatch",
    "Forbidden",
    "GenerationExhausted",
    "HoldingOfAnotherPrincipal",
    "InvalidRequest",
    "JobNotFound",
    "LeaseHeld",
    "LeaseLost",
    "LeaseNotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ReservedName",
    "ServiceUnavailable",
    "ShuttingDown",
    "StaleGeneration",
    "TenureError",
    "TooManyStreams",
    "TransportError",
    "Unauthenticated",
    "UnexpectedResponse",
    "UnknownGeneration",
    "WindowCompleted",
    "WindowLeaseMismatch",
    "WindowNotClaimed",
    "WindowNotDue",
    "WindowNotFound",
]


def _restore(cls: type[TenureError], args: tuple[Any, ...], state: dict[str, Any]) -> TenureError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class TenureError(Exception):
    """Base of every error the client raises about the service.

    `status` is the HTTP status (None when there was no answer) and `problem` the RFC 9457 body
    as decoded (empty when there was none).
    """

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.problem: Mapping[str, Any] = dict(problem or {})

    @property
    def type(self) -> str | None:
        """The problem `type` (`/problems/lease-held`), when the service sent one."""
        kind = self.problem.get("type")
        return kind if isinstance(kind, str) else None

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields: rebuild from the state so errors survive pickling (Celery results,
        # multiprocessing) without every subclass repeating its constructor arguments.
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class TransportError(TenureError):
    """The request got no answer. It may or may not have reached the service."""


class ServiceUnavailable(TenureError):
    """The service (or a proxy in front of it) cannot answer now; retrying later may work."""

    def __init__(
        self,
        detail: str,
        *,
        retry_after: float | None = None,
        status: int | None = ProblemType.STORAGE_UNAVAILABLE.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.retry_after = retry_after


class ShuttingDown(ServiceUnavailable):
    """The replica that answered is shutting down; another replica (or a retry) will serve."""


class TooManyStreams(ServiceUnavailable):
    """The replica serves its most event streams already: `limit` of them in all (`per` is
    `process`) or for this token's principal (`principal`: close some, e.g. dashboard tabs)."""

    def __init__(
        self,
        detail: str,
        *,
        limit: int | None = None,
        per: str | None = None,
        retry_after: float | None = None,
        status: int | None = ProblemType.TOO_MANY_STREAMS.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, retry_after=retry_after, status=status, problem=problem)
        self.limit = limit
        self.per = per


class Unauthenticated(TenureError):
    """The service needs a valid bearer token (`TENURE_TOKEN`)."""


class Forbidden(TenureError):
    """The token's principal may not do this, or not on this name (its namespaces)."""


class HoldingOfAnotherPrincipal(Forbidden):
    """The holding named belongs to another principal, even with the right holder string."""


class ReservedName(Forbidden):
    """The name is under `tenure.`, which only the service itself acts under: no token, not even
    `*` or an admin's, may acquire, renew, release, claim or verify there. Rename the lease."""


class RateLimited(TenureError):
    """Over the principal's request rate; `retry_after` seconds until the next request passes."""

    def __init__(
        self,
        detail: str,
        *,
        retry_after: float | None = None,
        status: int | None = ProblemType.RATE_LIMITED.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.retry_after = retry_after


class PayloadTooLarge(TenureError):
    """The request body is over the service's limit."""


class UnexpectedResponse(TenureError):
    """The service answered something this client does not understand."""


class InvalidRequest(TenureError):
    """The service refused a value: `errors` lists `{"field": …, "message": …}` items."""

    def __init__(
        self,
        detail: str,
        *,
        errors: tuple[Mapping[str, str], ...] = (),
        status: int | None = ProblemType.VALIDATION_ERROR.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.errors = errors


class LeaseHeld(TenureError):
    """Another holder holds the lease until `expires_at` (service clock)."""

    def __init__(
        self,
        detail: str,
        *,
        holder: str,
        expires_at: datetime,
        retry_after: float,
        status: int | None = ProblemType.LEASE_HELD.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.holder = holder
        self.expires_at = expires_at
        self.retry_after = retry_after


class LeaseLost(TenureError):
    """This holding of the lease is gone: expired, released, or taken over by another holder."""

    def __init__(
        self,
        detail: str,
        *,
        generation: int | None = None,
        status: int | None = ProblemType.LEASE_LOST.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.generation = generation


class LeaseNotFound(TenureError):
    """No lease by that name was ever acquired."""


class GenerationExhausted(TenureError):
    """No holding of the lease can begin, nor can a force-release move it on: its generation (or,
    for a name never acquired, the generation floor) is `generation`, and none past
    `MAX_GENERATION` is handed out."""

    def __init__(
        self,
        detail: str,
        *,
        generation: int | None = None,
        status: int | None = ProblemType.GENERATION_EXHAUSTED.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.generation = generation


class WindowNotFound(TenureError):
    """The job has no such window."""


class JobNotFound(TenureError):
    """404 `job-not-found`: no job is registered under that name."""


class WindowCompleted(TenureError):
    """The occurrence already ran to completion: a late or repeated run should skip it."""

    def __init__(
        self,
        detail: str,
        *,
        completed_at: datetime,
        status: int | None = ProblemType.WINDOW_COMPLETED.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.completed_at = completed_at


class WindowNotClaimed(TenureError):
    """Completing a window that this holding did not claim."""


class WindowLeaseMismatch(TenureError):
    """The window is bound to another lease (`lease`)."""

    def __init__(
        self,
        detail: str,
        *,
        lease: str,
        status: int | None = ProblemType.WINDOW_LEASE_MISMATCH.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.lease = lease


class WindowNotDue(TenureError):
    """The window's `occurrence` is still ahead of the service's clock (`now`, the database's)
    by more than its early tolerance: nothing may start it yet. A window named from a clock
    that runs ahead; resolve it with `client.resolve_window` instead."""

    def __init__(
        self,
        detail: str,
        *,
        occurrence: datetime,
        now: datetime,
        status: int | None = ProblemType.WINDOW_NOT_DUE.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.occurrence = occurrence
        self.now = now


class StaleGeneration(TenureError):
    """The resource has accepted a higher generation (`highest`): this writer is fenced off."""

    def __init__(
        self,
        detail: str,
        *,
        highest: int,
        status: int | None = ProblemType.STALE_GENERATION.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.highest = highest


class FenceLeaseMismatch(TenureError):
    """The resource is fenced by another lease (`lease`)."""

    def __init__(
        self,
        detail: str,
        *,
        lease: str,
        status: int | None = ProblemType.FENCE_LEASE_MISMATCH.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.lease = lease


class UnknownGeneration(TenureError):
    """The lease never handed out this generation; `current_generation` is its latest, if any."""

    def __init__(
        self,
        detail: str,
        *,
        current_generation: int | None,
        status: int | None = ProblemType.UNKNOWN_GENERATION.status,
        problem: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail, status=status, problem=problem)
        self.current_generation = current_generation
