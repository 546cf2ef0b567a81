"""The HTTP API v1 without I/O: what to send for each operation, and what an answer means.

Each operation is a function returning a `Request[T]` (method, path, JSON body, query, and the
decoder of a successful body into `T`). `decode_response` turns any answer — status, headers and
body bytes — into `T` or raises the `TenureError` subclass its problem `type` names. The sync and
async clients only send requests and sleep between retries; nothing here touches a socket, so
both share every rule, and the tests exercise them without a server.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import quote

from tenure._errors import (
    FenceLeaseMismatch,
    Forbidden,
    HoldingOfAnotherPrincipal,
    InvalidRequest,
    JobNotFound,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    ShuttingDown,
    StaleGeneration,
    TenureError,
    Unauthenticated,
    UnexpectedResponse,
    UnknownGeneration,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
    WindowNotFound,
)
from tenure._models import (
    Fence,
    Job,
    JobSpec,
    Lease,
    Overview,
    Page,
    Renewals,
    Verifications,
    Window,
)
from tenure.schedule import KeyFormat, window_key

__all__ = [
    "PROBLEM_PREFIX",
    "Granted",
    "Holding",
    "Request",
    "WaitPlan",
    "acquire",
    "claim_window",
    "complete_window",
    "decode_response",
    "delete_job",
    "error_from_response",
    "get_job",
    "get_lease",
    "get_overview",
    "get_window",
    "grant_of",
    "holding_of",
    "list_jobs",
    "list_leases",
    "list_windows",
    "put_job",
    "release",
    "renew",
    "renew_many",
    "resolve_window",
    "retry_after",
    "verify_fence",
    "verify_fences",
]

T = TypeVar("T")
Body = Mapping[str, Any]

PROBLEM_PREFIX = "/problems/"


class Holding(Protocol):
    """Anything naming a lease and a generation: a `Lease`, or a lease handle."""

    @property
    def name(self) -> str: ...

    @property
    def generation(self) -> int: ...


class Granted(Holding, Protocol):
    """A holding and the grant of its latest acquire or renew: a `Lease` answer, a handle."""

    @property
    def grant(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Request(Generic[T]):
    """One HTTP request of the API, and how to read its successful answer."""

    method: Literal["GET", "POST", "PUT", "DELETE"]
    path: str
    decode: Callable[[Body], T]
    json: Body | None = None
    params: Mapping[str, str | int] | None = None
    # Seconds the service may hold the request open before answering (a waiting acquire): the
    # client adds this to its timeout.
    wait: float = 0.0


def _segment(value: str, what: str) -> str:
    # Names never contain "/" on the service; quoting keeps a wrong one from changing the route.
    if not isinstance(value, str) or value in ("", ".", ".."):
        raise ValueError(f"not a {what}: {value!r}")
    return quote(value, safe="")


def _lease_path(name: str, action: str = "") -> str:
    path = f"/v1/leases/{_segment(name, 'lease name')}"
    return f"{path}/{action}" if action else path


def _window_path(job: str, window: str, action: str = "") -> str:
    path = f"/v1/jobs/{_segment(job, 'job name')}/windows/{_segment(window, 'window key')}"
    return f"{path}/{action}" if action else path


def _page_params(limit: int | None, cursor: str | None) -> dict[str, str | int]:
    params: dict[str, str | int] = {}
    if limit is not None:
        params["limit"] = limit
    if cursor is not None:
        params["cursor"] = cursor
    return params


def _lease_page(body: Body) -> Page[Lease]:
    return Page.from_json(body, Lease.from_json)


def _window_page(body: Body) -> Page[Window]:
    return Page.from_json(body, Window.from_json)


def holding_of(lease: Holding | str, generation: int | None) -> tuple[str, int]:
    """(lease name, generation) from a handle or `Lease`, or from a name and a generation."""
    if isinstance(lease, str):
        if generation is None:
            raise TypeError("a generation is needed when the lease is given by name")
        return lease, generation
    if generation is not None and generation != lease.generation:
        raise ValueError(f"generation {generation} contradicts the lease's {lease.generation}")
    return lease.name, lease.generation


def grant_of(
    lease: Granted | str, generation: int | None, grant: str | None
) -> tuple[str, int, str]:
    """(lease name, generation, grant) from a handle or `Lease`, or from a name, a generation
    and a grant: what a release names."""
    if isinstance(lease, str):
        if grant is None:
            raise TypeError(
                "a grant (of the latest acquire or renew answer) is needed when the lease is"
                " given by name"
            )
        return *holding_of(lease, generation), grant
    name, number = holding_of(lease, generation)
    if lease.grant is None:
        raise ValueError(f"lease {name!r} names no grant: give the latest acquire or renew answer")
    if grant is not None and grant != lease.grant:
        raise ValueError(f"grant {grant} contradicts the lease's {lease.grant}")
    return name, number, lease.grant


# Operations ---------------------------------------------------------------------------------


def acquire(name: str, holder: str, ttl: float, wait: float = 0.0) -> Request[Lease]:
    """Take the lease, or extend it if `holder` holds it; with `wait`, the service waits up to
    that many seconds for it to be free before answering `lease-held`."""
    body: dict[str, Any] = {"holder": holder, "ttl_seconds": ttl}
    if wait > 0:
        body["wait_seconds"] = wait
    return Request("POST", _lease_path(name, "acquire"), Lease.from_json, body, wait=max(wait, 0))


def renew(name: str, holder: str, generation: int, ttl: float) -> Request[Lease]:
    body = {"holder": holder, "generation": generation, "ttl_seconds": ttl}
    return Request("POST", _lease_path(name, "renew"), Lease.from_json, body)


def renew_many(holder: str, holdings: list[tuple[str, int]], ttl: float) -> Request[Renewals]:
    """Renew many holdings of `holder` in one request and one statement on the service."""
    leases = [{"name": name, "generation": generation} for name, generation in holdings]
    body = {"holder": holder, "ttl_seconds": ttl, "leases": leases}
    return Request("POST", "/v1/leases/renew", Renewals.from_json, body)


def release(name: str, holder: str, generation: int, grant: str) -> Request[Lease]:
    """End the holding that `grant` (of its latest acquire or renew) names: a release that
    arrives after the holder was granted the lease again ends nothing (`lease-lost`)."""
    body = {"holder": holder, "generation": generation, "grant": grant}
    return Request("POST", _lease_path(name, "release"), Lease.from_json, body)


def get_lease(name: str) -> Request[Lease]:
    return Request("GET", _lease_path(name), Lease.from_json)


def list_leases(prefix: str, limit: int | None, cursor: str | None) -> Request[Page[Lease]]:
    params = _page_params(limit, cursor)
    if prefix:
        params["prefix"] = prefix
    return Request("GET", "/v1/leases", _lease_page, params=params)


def claim_window(
    job: str, window: str, lease: str, holder: str, generation: int
) -> Request[Window]:
    body = {"holder": holder, "lease": lease, "generation": generation}
    return Request("POST", _window_path(job, window, "claim"), Window.from_json, body)


def complete_window(
    job: str, window: str, lease: str, holder: str, generation: int
) -> Request[Window]:
    body = {"holder": holder, "lease": lease, "generation": generation}
    return Request("POST", _window_path(job, window, "complete"), Window.from_json, body)


def get_window(job: str, window: str) -> Request[Window]:
    return Request("GET", _window_path(job, window), Window.from_json)


def list_windows(job: str, limit: int | None, cursor: str | None) -> Request[Page[Window]]:
    path = f"/v1/jobs/{_segment(job, 'job name')}/windows"
    return Request("GET", path, _window_page, params=_page_params(limit, cursor))


def resolve_window(
    cron: str,
    tz: str,
    key: KeyFormat,
    early_tolerance: float,
    clock: Callable[[], datetime] | None = None,
) -> Request[str]:
    """The window key of the occurrence a scheduler firing now meant, by the service's clock.

    No instant is sent: the service resolves at the database's `now()`, so a host whose clock
    is behind cannot pick an older window. The database's time is not in the answer, so the
    early tolerance is judged by `clock` (this host's): the next occurrence is taken when that
    clock says it is due within `early_tolerance` seconds. The host's clock can thus only move
    the window to the service's next occurrence, never before the service's own.
    """

    def decode(answer: Body) -> str:
        following = _moment(answer, "next_occurrence")
        now = datetime.now(UTC) if clock is None else clock()
        if now + timedelta(seconds=early_tolerance) >= following:
            return window_key(following, key)
        return _str(answer, "window")

    body = {"cron": cron, "timezone": tz, "key": key}
    return Request("POST", "/v1/windows/resolve", decode, body)


def verify_fence(resource: str, lease: str, generation: int) -> Request[Fence]:
    body = {"lease": lease, "generation": generation}
    path = f"/v1/fences/{_segment(resource, 'resource name')}/verify"
    return Request("POST", path, Fence.from_json, body)


def verify_fences(resources: list[str], lease: str, generation: int) -> Request[Verifications]:
    fences = [{"resource": r, "lease": lease, "generation": generation} for r in resources]
    return Request("POST", "/v1/fences/verify", _verifications, {"fences": fences})


def _verifications(data: Body) -> Verifications:
    return Verifications.from_json(data, _refusal)


def _refusal(problem: Body) -> TenureError:
    """The exception of a refusal inside a 200 answer, as if it had been a single answer."""
    status = problem.get("status")
    if not isinstance(status, int) or not isinstance(problem.get("type"), str):
        raise ValueError(f"malformed problem {problem!r}")
    return _problem_error(status, dict(problem), {})


def _job_path(job: str) -> str:
    return f"/v1/jobs/{_segment(job, 'job name')}"


def put_job(job: str, spec: JobSpec) -> Request[Job]:
    return Request("PUT", _job_path(job), Job.from_json, spec.to_json())


def get_job(job: str) -> Request[Job]:
    return Request("GET", _job_path(job), Job.from_json)


def delete_job(job: str) -> Request[None]:
    return Request("DELETE", _job_path(job), lambda _: None)


def _job_page(data: Body) -> Page[Job]:
    return Page.from_json(data, Job.from_json)


def list_jobs(prefix: str, limit: int | None, cursor: str | None) -> Request[Page[Job]]:
    params = _page_params(limit, cursor)
    if prefix:
        params["prefix"] = prefix
    return Request("GET", "/v1/jobs", _job_page, params=params)


def get_overview() -> Request[Overview]:
    return Request("GET", "/v1/overview", Overview.from_json)


# Answers ------------------------------------------------------------------------------------


def decode_response(
    request: Request[T], status: int, headers: Mapping[str, str], content: bytes
) -> T:
    """The decoded body of a 2xx answer; otherwise raise the error the answer describes."""
    if not 200 <= status < 300:
        raise error_from_response(status, headers, content)
    if status == 204:  # No Content (DELETE): nothing to decode
        return request.decode({})
    body = _json_object(content)
    if body is None:
        raise UnexpectedResponse(f"HTTP {status}: the body is not a JSON object", status=status)
    try:
        return request.decode(body)
    except (ValueError, TypeError) as error:
        raise UnexpectedResponse(f"HTTP {status}: {error}", status=status) from None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The `Retry-After` header in seconds (HTTP dates are not used by the service)."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def error_from_response(status: int, headers: Mapping[str, str], content: bytes) -> TenureError:
    """The exception for a non-2xx answer, from its RFC 9457 problem when it has one."""
    body = _json_object(content)
    if body is None or not isinstance(body.get("type"), str):
        return _plain_error(status, headers, content)
    return _problem_error(status, body, headers)


def _problem_error(status: int, body: dict[str, Any], headers: Mapping[str, str]) -> TenureError:
    """The exception a problem's `type` names (`type` is a string)."""
    kind: str = body["type"]
    detail = body.get("detail")
    detail = detail if isinstance(detail, str) else f"HTTP {status}: {kind}"
    decoder = _PROBLEMS.get(kind.removeprefix(PROBLEM_PREFIX)) if _is_ours(kind) else None
    if decoder is None:
        return TenureError(detail, status=status, problem=body)
    try:
        return decoder(detail, status, body, headers)
    except (ValueError, TypeError) as error:
        message = f"{detail} (malformed {kind} problem: {error})"
        return UnexpectedResponse(message, status=status, problem=body)


def _is_ours(kind: str) -> bool:
    return kind.startswith(PROBLEM_PREFIX)


def _plain_error(status: int, headers: Mapping[str, str], content: bytes) -> TenureError:
    text = content[:200].decode("utf-8", "replace").strip()
    detail = f"HTTP {status}" + (f": {text}" if text else "")
    if status in (502, 503, 504):
        return ServiceUnavailable(detail, retry_after=retry_after(headers), status=status)
    return TenureError(detail, status=status)


def _json_object(content: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


# Problem decoders: one per `type` of service/tenure_server/api/problems.py (the field readers
# serve the window resolution's answer too). -------------------------------------------------

Problem = dict[str, Any]
Decoder = Callable[[str, int, Problem, Mapping[str, str]], TenureError]


def _str(body: Body, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise ValueError(f"field {key!r} is not a string")
    return value


def _int(problem: Problem, key: str) -> int:
    value = problem.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {key!r} is not an integer")
    return value


def _optional_int(problem: Problem, key: str) -> int | None:
    return None if problem.get(key) is None else _int(problem, key)


def _seconds(problem: Problem, key: str) -> float | None:
    value = problem.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"field {key!r} is not a number")
    return float(value)


def _moment(body: Body, key: str) -> datetime:
    moment = datetime.fromisoformat(_str(body, key))
    if moment.tzinfo is None:
        raise ValueError(f"field {key!r} has no time zone")
    return moment


def _errors(problem: Problem) -> tuple[Mapping[str, str], ...]:
    items = problem.get("errors", [])
    if not isinstance(items, list):
        raise ValueError("field 'errors' is not a list")
    return tuple(
        {"field": str(item.get("field", "")), "message": str(item.get("message", ""))}
        for item in items
        if isinstance(item, dict)
    )


def _simple(cls: type[TenureError]) -> Decoder:
    def decode(detail: str, status: int, problem: Problem, _: Mapping[str, str]) -> TenureError:
        return cls(detail, status=status, problem=problem)

    return decode


def _lease_held(d: str, s: int, p: Problem, h: Mapping[str, str]) -> TenureError:
    seconds = _seconds(p, "retry_after_seconds")
    if seconds is None:
        seconds = retry_after(h) or 0.0
    return LeaseHeld(
        d,
        holder=_str(p, "holder"),
        expires_at=_moment(p, "expires_at"),
        retry_after=seconds,
        status=s,
        problem=p,
    )


def _storage_unavailable(d: str, s: int, p: Problem, h: Mapping[str, str]) -> TenureError:
    seconds = _seconds(p, "retry_after_seconds")
    return ServiceUnavailable(
        d, retry_after=retry_after(h) if seconds is None else seconds, status=s, problem=p
    )


_PROBLEMS: Mapping[str, Decoder] = {
    "validation-error": lambda d, s, p, _: InvalidRequest(
        d, errors=_errors(p), status=s, problem=p
    ),
    "lease-held": _lease_held,
    "lease-lost": lambda d, s, p, _: LeaseLost(
        d, generation=_optional_int(p, "generation"), status=s, problem=p
    ),
    "lease-not-found": _simple(LeaseNotFound),
    "window-not-found": _simple(WindowNotFound),
    "job-not-found": _simple(JobNotFound),
    "window-completed": lambda d, s, p, _: WindowCompleted(
        d, completed_at=_moment(p, "completed_at"), status=s, problem=p
    ),
    "window-not-claimed": _simple(WindowNotClaimed),
    "window-lease-mismatch": lambda d, s, p, _: WindowLeaseMismatch(
        d, lease=_str(p, "lease"), status=s, problem=p
    ),
    "stale-generation": lambda d, s, p, _: StaleGeneration(
        d, highest=_int(p, "highest"), status=s, problem=p
    ),
    "fence-lease-mismatch": lambda d, s, p, _: FenceLeaseMismatch(
        d, lease=_str(p, "lease"), status=s, problem=p
    ),
    "unknown-generation": lambda d, s, p, _: UnknownGeneration(
        d, current_generation=_optional_int(p, "current_generation"), status=s, problem=p
    ),
    "storage-unavailable": _storage_unavailable,
    "shutting-down": lambda d, s, p, h: ShuttingDown(
        d, retry_after=retry_after(h), status=s, problem=p
    ),
    "unauthenticated": _simple(Unauthenticated),
    "forbidden": _simple(Forbidden),
    "holding-of-another-principal": _simple(HoldingOfAnotherPrincipal),
    "rate-limited": lambda d, s, p, h: RateLimited(
        d, retry_after=retry_after(h), status=s, problem=p
    ),
    "payload-too-large": _simple(PayloadTooLarge),
}


# How a waiting acquire is sent. --------------------------------------------------------------


# When the service answers a waiting acquire "held" well before the wait it was asked for (another
# waiter was woken first), ask again after at most this pause; never spin.
EARLY_ANSWER_PAUSE = 0.1


@dataclass(frozen=True, slots=True)
class WaitPlan:
    """How an acquire with `wait` seconds is sent: requests asking the service to wait at most
    `max_chunk` seconds each, until `deadline` (a monotonic time) passes."""

    deadline: float
    max_chunk: float

    def chunk(self, now: float) -> float:
        """Seconds to ask the service to wait in the next request (0: do not wait)."""
        return round(max(0.0, min(self.max_chunk, self.deadline - now)), 3)

    def pause_after_held(self, sent_at: float, asked: float, now: float) -> float | None:
        """After a `lease-held` answer: seconds to pause before asking again, or None to raise."""
        remaining = self.deadline - now
        if asked <= 0 or remaining <= 0:
            return None
        if now - sent_at >= asked / 2:
            return 0.0
        return min(EARLY_ANSWER_PAUSE, remaining)
