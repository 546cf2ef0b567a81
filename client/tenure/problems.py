"""Every RFC 9457 problem `type` of Tenure, written once: its slug, HTTP status and title.

Three parts of Tenure answer or read `application/problem+json`, and they must agree on each
`type`: the service (`tenure_server.api.problems` maps its domain errors onto these entries),
the `FencingMiddleware` of a downstream app (its refusals share `stale-generation`,
`fence-lease-mismatch` and `unknown-generation` with the service's fence checks), and this
client (one exception per type it decodes). `ProblemType` is the catalogue: one member a type,
iterate it for them all. A problem's body is always

    {"type": "/problems/<slug>", "title": …, "status": …, "detail": …, <extension members>}

where the extension members are the facts of that error (`holder`, `highest`, …). `type` is a
relative URI: a GET on it, resolved against the service, describes the problem.

Importing this module needs nothing beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

__all__ = ["MEDIA_TYPE", "TYPE_PREFIX", "ErrorProblem", "ProblemType", "problem_of"]

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "/problems/"


class ProblemType(Enum):
    """One problem `type`: its slug, the HTTP status it is answered with, and its title."""

    slug: str
    status: int
    title: str

    def __init__(self, slug: str, status: int, title: str) -> None:
        self.slug = slug
        self.status = status
        self.title = title

    @property
    def type(self) -> str:
        """The `type` member: `/problems/<slug>`."""
        return TYPE_PREFIX + self.slug

    def body(
        self, detail: str, *, status: int | None = None, facts: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The problem as a JSON object. `status` overrides the type's own (an HTTP error's own
        status, the middleware's `missing_status`); `facts` are the extension members."""
        return {
            "type": self.type,
            "title": self.title,
            "status": self.status if status is None else status,
            "detail": detail,
            **(facts or {}),
        }

    # Access
    UNAUTHENTICATED = ("unauthenticated", 401, "Authentication required")
    FORBIDDEN = ("forbidden", 403, "Not allowed for this principal")
    HOLDING_OF_ANOTHER_PRINCIPAL = (
        "holding-of-another-principal",
        403,
        "The holding belongs to another principal",
    )
    RESERVED_NAME = ("reserved-name", 403, "Name reserved to the service itself")
    RATE_LIMITED = ("rate-limited", 429, "Too many requests")

    # Requests
    VALIDATION_ERROR = ("validation-error", 422, "Invalid request")
    PAYLOAD_TOO_LARGE = ("payload-too-large", 413, "Request body too large")
    NOT_FOUND = ("not-found", 404, "No such resource")
    METHOD_NOT_ALLOWED = ("method-not-allowed", 405, "Method not allowed")
    HTTP_ERROR = ("http-error", 400, "Bad request")

    # Leases and windows
    LEASE_HELD = ("lease-held", 409, "Lease is held by another holder")
    LEASE_LOST = ("lease-lost", 409, "Lease is no longer held by this holder")
    LEASE_NOT_FOUND = ("lease-not-found", 404, "Lease not found")
    WINDOW_NOT_FOUND = ("window-not-found", 404, "Window not found")
    JOB_NOT_FOUND = ("job-not-found", 404, "Job not found")
    WINDOW_COMPLETED = ("window-completed", 409, "Window already completed")
    WINDOW_NOT_CLAIMED = ("window-not-claimed", 409, "Window not claimed by this holding")
    WINDOW_LEASE_MISMATCH = ("window-lease-mismatch", 409, "Window is bound to another lease")
    GENERATION_EXHAUSTED = ("generation-exhausted", 409, "No generation is left to hand out")
    WINDOW_NOT_DUE = ("window-not-due", 409, "Window's occurrence is not due yet")

    # Fences: answered by the service's fence checks and by the FencingMiddleware alike
    STALE_GENERATION = ("stale-generation", 409, "A higher generation has been seen")
    FENCE_LEASE_MISMATCH = ("fence-lease-mismatch", 409, "Resource is fenced by another lease")
    UNKNOWN_GENERATION = ("unknown-generation", 422, "Generation was never handed out")

    # Fences: the FencingMiddleware's own refusals
    FENCING_TOKEN_REQUIRED = ("fencing-token-required", 428, "Fencing token required")
    FENCING_TOKEN_MALFORMED = ("fencing-token-malformed", 400, "Malformed fencing token")
    FENCE_STORE_UNAVAILABLE = (
        "fence-store-unavailable",
        503,
        "Fence store unavailable; retry later",
    )
    # A FencingError subclass of the app's own that the middleware has no row for.
    FENCING_REFUSED = ("fencing-refused", 403, "Refused by the fence")

    # The service's state
    STORAGE_UNAVAILABLE = ("storage-unavailable", 503, "Database unavailable; retry later")
    SHUTTING_DOWN = ("shutting-down", 503, "Service process shutting down; retry")
    TOO_MANY_STREAMS = ("too-many-streams", 503, "Too many event streams on this process; retry")
    # Nobody reads this answer; 499 is the de facto "client closed request" status.
    REQUEST_ABANDONED = ("request-abandoned", 499, "Caller went away")
    INTERNAL_ERROR = ("internal-error", 500, "Internal error")


def _no_facts(_: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class ErrorProblem:
    """How instances of an exception class are answered: their problem type, and `facts`, the
    extension members read off an instance. (`facts` takes `Any`: a table holds rows of many
    classes, each reading its own class's attributes.)"""

    kind: ProblemType
    facts: Callable[[Any], dict[str, Any]] = _no_facts


E = TypeVar("E", bound=BaseException)


def problem_of(table: Mapping[type[E], ErrorProblem], error: E) -> ErrorProblem | None:
    """The row of `error`'s nearest class in `table` (its own, else a base class's); None
    when neither it nor a base class has one."""
    return next((table[cls] for cls in type(error).__mro__ if cls in table), None)
