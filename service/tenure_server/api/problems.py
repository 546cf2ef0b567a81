"""One table maps each domain error to its HTTP status, problem `type` and title; one function
renders RFC 9457 `application/problem+json` for all of them."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from tenure_server.domain import errors as e

_log = logging.getLogger("tenure.api")

PROBLEM_JSON = "application/problem+json"
# Problem types are relative URIs; GET on one (resolved against the service) describes it.
TYPE_PREFIX = "/problems/"

Facts = Callable[[Any], dict[str, Any]]


def _none(_: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class ProblemType:
    slug: str
    status: int
    title: str
    facts: Facts = _none

    @property
    def type(self) -> str:
        return TYPE_PREFIX + self.slug


def _iso(moment: datetime) -> str:
    return moment.isoformat()


PROBLEMS: Mapping[type[e.TenureError], ProblemType] = {
    e.Unauthenticated: ProblemType("unauthenticated", 401, "Authentication required"),
    e.Forbidden: ProblemType("forbidden", 403, "Not allowed for this principal"),
    e.HoldingOfAnotherPrincipal: ProblemType(
        "holding-of-another-principal", 403, "The holding belongs to another principal"
    ),
    e.RateLimited: ProblemType(
        "rate-limited",
        429,
        "Too many requests",
        lambda x: {"retry_after_seconds": x.retry_after_seconds},
    ),
    e.ShuttingDown: ProblemType(
        "shutting-down",
        503,
        "Service process shutting down; retry",
        lambda x: {"retry_after_seconds": x.retry_after_seconds},
    ),
    e.InvalidInput: ProblemType(
        "validation-error",
        422,
        "Invalid request",
        lambda x: {"errors": [{"field": x.field, "message": x.message}]},
    ),
    e.LeaseHeld: ProblemType(
        "lease-held",
        409,
        "Lease is held by another holder",
        lambda x: {
            "holder": x.holder,
            "expires_at": _iso(x.expires_at),
            "retry_after_seconds": x.retry_after_seconds,
        },
    ),
    e.LeaseLost: ProblemType(
        "lease-lost",
        409,
        "Lease is no longer held by this holder",
        lambda x: {"generation": x.generation},
    ),
    e.LeaseNotFound: ProblemType("lease-not-found", 404, "Lease not found"),
    e.WindowNotFound: ProblemType("window-not-found", 404, "Window not found"),
    e.JobNotFound: ProblemType("job-not-found", 404, "Job not found"),
    e.WindowCompleted: ProblemType(
        "window-completed",
        409,
        "Window already completed",
        lambda x: {"completed_at": _iso(x.completed_at)},
    ),
    e.WindowNotClaimed: ProblemType(
        "window-not-claimed", 409, "Window not claimed by this holding"
    ),
    e.WindowLeaseMismatch: ProblemType(
        "window-lease-mismatch",
        409,
        "Window is bound to another lease",
        lambda x: {"lease": x.lease},
    ),
    e.StaleGeneration: ProblemType(
        "stale-generation",
        409,
        "A higher generation has been seen",
        lambda x: {"highest": x.highest},
    ),
    e.FenceLeaseMismatch: ProblemType(
        "fence-lease-mismatch",
        409,
        "Resource is fenced by another lease",
        lambda x: {"lease": x.lease},
    ),
    e.UnknownGeneration: ProblemType(
        "unknown-generation",
        422,
        "Generation was never handed out",
        lambda x: {"current_generation": x.current},
    ),
    # Nobody reads this answer; 499 is the de facto "client closed request" status.
    e.RequestAbandoned: ProblemType("request-abandoned", 499, "Caller went away"),
    e.StorageUnavailable: ProblemType(
        "storage-unavailable",
        503,
        "Database unavailable; retry later",
        lambda x: {"retry_after_seconds": x.retry_after_seconds},
    ),
}

# Problems raised by the HTTP layer itself, not by the domain.
NOT_FOUND = ProblemType("not-found", 404, "No such resource")
METHOD_NOT_ALLOWED = ProblemType("method-not-allowed", 405, "Method not allowed")
PAYLOAD_TOO_LARGE = ProblemType("payload-too-large", 413, "Request body too large")
HTTP_ERROR = ProblemType("http-error", 400, "Bad request")
INTERNAL = ProblemType("internal-error", 500, "Internal error")

ALL_TYPES: tuple[ProblemType, ...] = (
    *PROBLEMS.values(),
    NOT_FOUND,
    METHOD_NOT_ALLOWED,
    PAYLOAD_TOO_LARGE,
    HTTP_ERROR,
    INTERNAL,
)


def problem_response(
    kind: ProblemType,
    detail: str,
    *,
    status: int | None = None,
    facts: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = _body(kind, detail, status or kind.status, facts or {})
    return JSONResponse(body, status_code=body["status"], headers=headers, media_type=PROBLEM_JSON)


def _retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def _kind(error: e.TenureError) -> ProblemType:
    return next(PROBLEMS[cls] for cls in type(error).__mro__ if cls in PROBLEMS)


def problem_body(error: e.TenureError) -> dict[str, Any]:
    """The problem of a domain error as a JSON object: the body `domain_problem` answers."""
    kind = _kind(error)
    return _body(kind, error.detail, kind.status, kind.facts(error))


def _body(kind: ProblemType, detail: str, status: int, facts: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind.type, "title": kind.title, "status": status, "detail": detail, **facts}


def domain_problem(error: e.TenureError) -> JSONResponse:
    """The problem answer for a domain error, wherever it was raised."""
    kind = _kind(error)
    headers = None
    if isinstance(error, e.LeaseHeld | e.RateLimited | e.ShuttingDown | e.StorageUnavailable):
        headers = _retry_after(error.retry_after_seconds)
    elif isinstance(error, e.Unauthenticated):
        # Basic first: a browser prompts for it (the token is the password); APIs use Bearer.
        headers = {"WWW-Authenticate": 'Basic realm="tenure", Bearer realm="tenure"'}
    if isinstance(error, e.StorageUnavailable):
        _log.warning("storage unavailable: %s", error.detail)
    return problem_response(kind, error.detail, facts=kind.facts(error), headers=headers)


async def _domain_error(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, e.TenureError)
    return domain_problem(error)


def _field(location: tuple[Any, ...]) -> str:
    # ("body", "holder") -> "holder"; ("path", "name") -> "name"; the body itself -> "body".
    parts = [str(part) for part in location[1:]] or [str(part) for part in location]
    return ".".join(parts)


async def _validation_error(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems = [
        {"field": _field(tuple(item.get("loc", ()))), "message": str(item.get("msg", ""))}
        for item in error.errors()
    ]
    detail = "; ".join(f"{item['field']}: {item['message']}" for item in problems)
    kind = PROBLEMS[e.InvalidInput]
    return problem_response(kind, detail, facts={"errors": problems})


def _allowed_methods(request: Request) -> str:
    # Starlette's 405 names the methods of the first route at the path only; a path served by
    # several routes (GET, PUT and DELETE /v1/jobs/{job}) must list them all (RFC 9110 15.5.6).
    methods: set[str] = set()
    for route in request.app.router.routes:
        if route.matches(request.scope)[0] is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    kind = {404: NOT_FOUND, 405: METHOD_NOT_ALLOWED}.get(error.status_code, HTTP_ERROR)
    headers = dict(error.headers) if error.headers else {}
    if error.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
    return problem_response(
        kind, str(error.detail), status=error.status_code, headers=headers or None
    )


async def _unexpected(_: Request, error: Exception) -> JSONResponse:
    _log.exception("unhandled error", exc_info=error)
    return problem_response(INTERNAL, "the service failed to answer; this is a bug")


def install(app: FastAPI) -> None:
    app.add_exception_handler(e.TenureError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


def describe(slug: str) -> ProblemType | None:
    return next((kind for kind in ALL_TYPES if kind.slug == slug), None)
