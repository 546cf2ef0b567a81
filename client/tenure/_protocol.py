"""The HTTP API v1 without I/O: what to send for each operation, and what an answer means.

Each operation is a function returning a `Request[T]` (method, path, JSON body, query, and the
decoder of a successful body into `T`). `decode_response` turns any answer — status, headers and
body bytes — into `T` or raises the `TenureError` subclass its problem `type` names (read by
`tenure._error_answers`). The sync and
async clients only send requests and sleep between retries; nothing here touches a socket, so
both share every rule, and the tests exercise them without a server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import quote

from tenure._error_answers import error_from_response, json_object, refusal
from tenure._errors import UnexpectedResponse
from tenure._models import (
    Fence,
    Job,
    JobSpec,
    Lease,
    Overview,
    Page,
    Renewals,
    Resolution,
    Verifications,
    Window,
)
from tenure.schedule import KeyFormat

__all__ = [
    "Granted",
    "Holding",
    "Request",
    "WaitPlan",
    "acquire",
    "claim_window",
    "complete_window",
    "decode_response",
    "delete_job",
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
    "verify_fence",
    "verify_fences",
]

T = TypeVar("T")
Body = Mapping[str, Any]


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
    cron: str, tz: str, key: KeyFormat, early_tolerance: float
) -> Request[Resolution]:
    """The window of the occurrence a scheduler firing now meant, by the service's clock.

    No instant is sent: the service resolves at the database's `now()` and applies the early
    tolerance itself (an occurrence at most `early_tolerance` seconds ahead counts), so this
    host's clock decides nothing. The answer carries that `now`, to compare this host's with.
    """
    body = {"cron": cron, "timezone": tz, "key": key, "early_tolerance_seconds": early_tolerance}
    return Request("POST", "/v1/windows/resolve", Resolution.from_json, body)


def verify_fence(resource: str, lease: str, generation: int) -> Request[Fence]:
    body = {"lease": lease, "generation": generation}
    path = f"/v1/fences/{_segment(resource, 'resource name')}/verify"
    return Request("POST", path, Fence.from_json, body)


def verify_fences(resources: list[str], lease: str, generation: int) -> Request[Verifications]:
    fences = [{"resource": r, "lease": lease, "generation": generation} for r in resources]
    return Request("POST", "/v1/fences/verify", _verifications, {"fences": fences})


def _verifications(data: Body) -> Verifications:
    return Verifications.from_json(data, refusal)


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
    # Registered jobs only: an unregistered one has no schedule (the overview lists those).
    params["unregistered"] = "false"
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
    body = json_object(content)
    if body is None:
        raise UnexpectedResponse(f"HTTP {status}: the body is not a JSON object", status=status)
    try:
        return request.decode(body)
    except (ValueError, TypeError) as error:
        raise UnexpectedResponse(f"HTTP {status}: {error}", status=status) from None


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
