"""Every RFC 9457 problem `type` of Tenure, written once: its slug, HTTP status and title.

Three parts of Tenure answer or read `application/problem+json`, and they must agree on each
`type`: the service (`tenure_server.api.problems` maps its domain errors onto these entries),
the `FencingMiddleware` of a downstream app (its refusals share `stale-generation`,
`fence-lease-mismatch` and `unknown-generation` with the service's fence checks), and this
client (one exception per type it decodes). `ProblemType` is the catalogue: one member a type,
iterate it for them all; each has a description (what it means, what to do) that
`GET /problems/<slug>` answers. A problem's body is always

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
    """One problem `type`: its slug, the HTTP status it is answered with, its title, and a
    description (what it means, what to do) that `GET /problems/<slug>` answers."""

    slug: str
    status: int
    title: str
    description: str

    def __init__(self, slug: str, status: int, title: str, description: str) -> None:
        self.slug = slug
        self.status = status
        self.title = title
        self.description = description

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
    UNAUTHENTICATED = (
        "unauthenticated",
        401,
        "Authentication required",
        "The request carries no valid bearer token. Send `Authorization: Bearer <token>` with a "
        "token whose hash is in the service's tokens file (`tenure token new` makes both); in a "
        "browser, type any user name and the token as the password.",
    )
    FORBIDDEN = (
        "forbidden",
        403,
        "Not allowed for this principal",
        "The token is valid, but its principal's role (reader, client, admin) or namespaces (name "
        "prefixes) do not cover this action on this name. Use a token of a principal that may, "
        "or have an operator widen this principal's entry in the tokens file.",
    )
    HOLDING_OF_ANOTHER_PRINCIPAL = (
        "holding-of-another-principal",
        403,
        "The holding belongs to another principal",
        "The holder and generation are right, but another principal acquired this holding: only "
        "the principal that acquired it may renew, release, claim or complete with it. Use that "
        "principal's token.",
    )
    RATE_LIMITED = (
        "rate-limited",
        429,
        "Too many requests",
        "This principal sends more requests than the service allows it "
        "(TENURE_RATE_LIMIT_PER_SECOND, per process). Wait `retry_after_seconds` (the "
        "Retry-After header), then send more slowly.",
    )
    RESERVED_NAME = (
        "reserved-name",
        403,
        "Name reserved to the service itself",
        "Names under `tenure.` (`name`) belong to the service itself, such as its monitor's lease "
        "`tenure.monitor`: no caller may acquire, renew, release, claim, complete or verify with "
        "one, whatever its token. Rename the job, lease or resource.",
    )

    # Requests
    VALIDATION_ERROR = (
        "validation-error",
        422,
        "Invalid request",
        "The request does not match the API: a value is missing, of the wrong type or outside "
        "its bounds. `errors` names each field and what is wrong with it; /docs has the contract.",
    )
    PAYLOAD_TOO_LARGE = (
        "payload-too-large",
        413,
        "Request body too large",
        "The request body is larger than the service accepts (TENURE_MAX_BODY_BYTES). Send less "
        "at once: a smaller batch.",
    )
    NOT_FOUND = (
        "not-found",
        404,
        "No such resource",
        "Nothing answers at this path. Check the URL against /docs: the API's paths start with "
        "/v1/.",
    )
    METHOD_NOT_ALLOWED = (
        "method-not-allowed",
        405,
        "Method not allowed",
        "The path exists, but not for this method; the Allow header lists the methods it takes.",
    )
    HTTP_ERROR = (
        "http-error",
        400,
        "Bad request",
        "The request could not be served as sent; its status and detail say why. Check it "
        "against /docs.",
    )

    # Leases and windows
    LEASE_HELD = (
        "lease-held",
        409,
        "Lease is held by another holder",
        "Another holder (`holder`) holds the lease until `expires_at`, unless it renews. Skip "
        "this run; or retry after `retry_after_seconds` (Retry-After); or acquire with "
        "`wait_seconds` to wait for it.",
    )
    LEASE_LOST = (
        "lease-lost",
        409,
        "Lease is no longer held by this holder",
        "This holder no longer holds the lease at `generation`: the holding expired, was released "
        "or force-released, or another holder took the lease over. Stop the work done under it "
        "now; acquire again for a new generation.",
    )
    LEASE_NOT_FOUND = (
        "lease-not-found",
        404,
        "Lease not found",
        "No lease has this name: it has never been acquired (a lease is created by its first "
        "acquire). Check the name, or acquire it.",
    )
    WINDOW_NOT_FOUND = (
        "window-not-found",
        404,
        "Window not found",
        "This job has no record of this window: nobody has claimed it yet. A holder of the job's "
        "lease claims it (POST /v1/jobs/{job}/windows/{window}/claim).",
    )
    JOB_NOT_FOUND = (
        "job-not-found",
        404,
        "Job not found",
        "No job is registered under this name. Register it (PUT /v1/jobs/{job}, or `tenure run "
        "--register`) for the service to watch its schedule; leases and windows work without it.",
    )
    WINDOW_COMPLETED = (
        "window-completed",
        409,
        "Window already completed",
        "This occurrence of the job was completed at `completed_at` and must not run again. Skip "
        "it: this is how a late or repeated run learns that the work is done.",
    )
    WINDOW_NOT_CLAIMED = (
        "window-not-claimed",
        409,
        "Window not claimed by this holding",
        "Only the holding (holder and generation) that claimed a window may complete it, and this "
        "one did not claim it. Claim it with the current holding first.",
    )
    WINDOW_LEASE_MISMATCH = (
        "window-lease-mismatch",
        409,
        "Window is bound to another lease",
        "The window was claimed under another lease (`lease`), and a window keeps its lease. "
        "Claim and complete it under that lease.",
    )
    GENERATION_EXHAUSTED = (
        "generation-exhausted",
        409,
        "No generation is left to hand out",
        "The lease's generation (`generation`), or the generation floor, has reached 2**53-1, the "
        "largest every JSON reader holds exactly: no new holding can begin under this name. Use "
        "another lease name; docs/operations.md says how the floor is checked.",
    )
    WINDOW_NOT_DUE = (
        "window-not-due",
        409,
        "Window's occurrence is not due yet",
        "By the database's clock (`now`) this window's occurrence (`occurrence`) lies further "
        "ahead than TENURE_MAX_EARLY_TOLERANCE_SECONDS: a host clock that runs ahead picked it. "
        "Skip this run; resolve the window with POST /v1/windows/resolve instead.",
    )

    # Fences: answered by the service's fence checks and by the FencingMiddleware alike
    STALE_GENERATION = (
        "stale-generation",
        409,
        "A higher generation has been seen",
        "A holder with a higher generation (`highest`) has written here, or been granted the "
        "lease, since this generation was handed out: the caller lost its lease. Stop; do not "
        "retry with this generation.",
    )
    FENCE_LEASE_MISMATCH = (
        "fence-lease-mismatch",
        409,
        "Resource is fenced by another lease",
        "The resource is fenced by another lease (`lease`), and a resource keeps its lease. Send "
        "that lease's token, or fence another resource.",
    )
    UNKNOWN_GENERATION = (
        "unknown-generation",
        422,
        "Generation was never handed out",
        "The lease never handed out this generation to a holder (`current_generation` is its "
        "latest): a made-up or mistyped token, one from another database, or the generation a "
        "force-release moved to. Send the generation the acquire returned.",
    )

    # Fences: the FencingMiddleware's own refusals
    FENCING_TOKEN_REQUIRED = (
        "fencing-token-required",
        428,
        "Fencing token required",
        "This endpoint is fenced: send `Fencing-Token: <lease>/<generation>` of the lease the "
        "caller holds (the client's fencing helpers add it).",
    )
    FENCING_TOKEN_MALFORMED = (
        "fencing-token-malformed",
        400,
        "Malformed fencing token",
        "The Fencing-Token header is not one `<lease>/<generation>`, with a generation from 1 to "
        "2**53-1 without leading zeros. Send the token as the acquire returned it.",
    )
    FENCE_STORE_UNAVAILABLE = (
        "fence-store-unavailable",
        503,
        "Fence store unavailable; retry later",
        "The store that keeps the fences could not be asked, so nothing was written. Retry "
        "after Retry-After.",
    )
    # A FencingError subclass of the app's own that the middleware has no row for.
    FENCING_REFUSED = (
        "fencing-refused",
        403,
        "Refused by the fence",
        "The application's fence refused this token for a reason of its own; `detail` says which.",
    )

    # The service's state
    STORAGE_UNAVAILABLE = (
        "storage-unavailable",
        503,
        "Database unavailable; retry later",
        "The service cannot reach its database now, or the database asked for a retry (a "
        "timeout, a conflict). Nothing was decided: retry after `retry_after_seconds` "
        "(Retry-After); /readyz shows when the database is back.",
    )
    SHUTTING_DOWN = (
        "shutting-down",
        503,
        "Service process shutting down; retry",
        "This process of the service is stopping (a deploy, a scale-down) and decided nothing. "
        "Retry: another replica answers, or this one once restarted.",
    )
    TOO_MANY_STREAMS = (
        "too-many-streams",
        503,
        "Too many event streams on this process; retry",
        "This process serves as many event streams as it may (`per`: `process`, "
        "TENURE_EVENTS_MAX_STREAMS), or as many as one principal may "
        "(`principal`, TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL). Retry after "
        "`retry_after_seconds`, on another replica, or close streams no longer read.",
    )
    # Nobody reads this answer; 499 is the de facto "client closed request" status.
    REQUEST_ABANDONED = (
        "request-abandoned",
        499,
        "Caller went away",
        "The caller stopped waiting for a lease and closed the request; nothing was acquired "
        "for it. Seen in logs and metrics only.",
    )
    INTERNAL_ERROR = (
        "internal-error",
        500,
        "Internal error",
        "The service failed to answer: a bug. Its log has the traceback; please report it. "
        "Retrying may succeed.",
    )


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
