"""One table maps each domain error to its problem type (of the catalogue `tenure.problems`:
status, `type` and title) and the facts it carries; one function renders RFC 9457
`application/problem+json` for all of them."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from tenure.problems import MEDIA_TYPE, ErrorProblem, ProblemType, problem_of
from tenure_server.domain import errors as e

__all__ = [
    "ALL_TYPES",
    "NOT_FOUND",
    "PAYLOAD_TOO_LARGE",
    "PROBLEMS",
    "describe",
    "domain_problem",
    "install",
    "problem_body",
    "problem_response",
]

_log = logging.getLogger("tenure.api")


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _retry_after_seconds(error: Any) -> dict[str, Any]:
    return {"retry_after_seconds": error.retry_after_seconds}


# The problem types and titles are the catalogue's (tenure.problems, shared with the client and
# the FencingMiddleware); which domain error is which type, and the facts it carries, are ours.
PROBLEMS: Mapping[type[e.TenureError], ErrorProblem] = {
    e.Unauthenticated: ErrorProblem(ProblemType.UNAUTHENTICATED),
    e.Forbidden: ErrorProblem(ProblemType.FORBIDDEN),
    e.HoldingOfAnotherPrincipal: ErrorProblem(ProblemType.HOLDING_OF_ANOTHER_PRINCIPAL),
    e.ReservedName: ErrorProblem(ProblemType.RESERVED_NAME, lambda x: {"name": x.name}),
    e.RateLimited: ErrorProblem(ProblemType.RATE_LIMITED, _retry_after_seconds),
    e.ShuttingDown: ErrorProblem(ProblemType.SHUTTING_DOWN, _retry_after_seconds),
    e.TooManyStreams: ErrorProblem(
        ProblemType.TOO_MANY_STREAMS,
        lambda x: {"retry_after_seconds": x.retry_after_seconds, "limit": x.limit, "per": x.per},
    ),
    e.InvalidInput: ErrorProblem(
        ProblemType.VALIDATION_ERROR,
        lambda x: {"errors": [{"field": x.field, "message": x.message}]},
    ),
    e.LeaseHeld: ErrorProblem(
        ProblemType.LEASE_HELD,
        lambda x: {
            "holder": x.holder,
            "expires_at": _iso(x.expires_at),
            "retry_after_seconds": x.retry_after_seconds,
        },
    ),
    e.LeaseLost: ErrorProblem(ProblemType.LEASE_LOST, lambda x: {"generation": x.generation}),
    e.LeaseNotFound: ErrorProblem(ProblemType.LEASE_NOT_FOUND),
    e.GenerationExhausted: ErrorProblem(
        ProblemType.GENERATION_EXHAUSTED, lambda x: {"generation": x.generation}
    ),
    e.WindowNotFound: ErrorProblem(ProblemType.WINDOW_NOT_FOUND),
    e.JobNotFound: ErrorProblem(ProblemType.JOB_NOT_FOUND),
    e.WindowCompleted: ErrorProblem(
        ProblemType.WINDOW_COMPLETED, lambda x: {"completed_at": _iso(x.completed_at)}
    ),
    e.WindowNotClaimed: ErrorProblem(ProblemType.WINDOW_NOT_CLAIMED),
    e.WindowLeaseMismatch: ErrorProblem(
        ProblemType.WINDOW_LEASE_MISMATCH, lambda x: {"lease": x.lease}
    ),
    e.WindowNotDue: ErrorProblem(
        ProblemType.WINDOW_NOT_DUE,
        lambda x: {"occurrence": _iso(x.occurrence), "now": _iso(x.now)},
    ),
    e.StaleGeneration: ErrorProblem(ProblemType.STALE_GENERATION, lambda x: {"highest": x.highest}),
    e.FenceLeaseMismatch: ErrorProblem(
        ProblemType.FENCE_LEASE_MISMATCH, lambda x: {"lease": x.lease}
    ),
    e.UnknownGeneration: ErrorProblem(
        ProblemType.UNKNOWN_GENERATION, lambda x: {"current_generation": x.current}
    ),
    e.RequestAbandoned: ErrorProblem(ProblemType.REQUEST_ABANDONED),
    e.StorageUnavailable: ErrorProblem(ProblemType.STORAGE_UNAVAILABLE, _retry_after_seconds),
}

# Problems raised by the HTTP layer itself, not by the domain.
NOT_FOUND = ProblemType.NOT_FOUND
PAYLOAD_TOO_LARGE = ProblemType.PAYLOAD_TOO_LARGE

# Every type this service answers: what GET /problems/<slug> describes.
ALL_TYPES: tuple[ProblemType, ...] = (
    *(row.kind for row in PROBLEMS.values()),
    NOT_FOUND,
    ProblemType.METHOD_NOT_ALLOWED,
    PAYLOAD_TOO_LARGE,
    ProblemType.HTTP_ERROR,
    ProblemType.INTERNAL_ERROR,
)


def problem_response(
    kind: ProblemType,
    detail: str,
    *,
    status: int | None = None,
    facts: Mapping[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = kind.body(detail, status=status, facts=facts)
    return JSONResponse(body, status_code=body["status"], headers=headers, media_type=MEDIA_TYPE)


def _retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def _row(error: e.TenureError) -> ErrorProblem:
    row = problem_of(PROBLEMS, error)
    # Every domain error has a row (tests/unit/test_problems.py); the base class is never raised.
    assert row is not None, type(error)
    return row


def problem_body(error: e.TenureError) -> dict[str, Any]:
    """The problem of a domain error as a JSON object: the body `domain_problem` answers."""
    row = _row(error)
    return row.kind.body(error.detail, facts=row.facts(error))


# Refusals that say when to come back (Retry-After).
_RETRY_LATER = (e.LeaseHeld, e.RateLimited, e.ShuttingDown, e.TooManyStreams, e.StorageUnavailable)


def domain_problem(error: e.TenureError) -> JSONResponse:
    """The problem answer for a domain error, wherever it was raised."""
    row = _row(error)
    headers = None
    if isinstance(error, _RETRY_LATER):
        headers = _retry_after(error.retry_after_seconds)
    elif isinstance(error, e.Unauthenticated):
        # Basic first: a browser prompts for it (the token is the password); APIs use Bearer.
        headers = {"WWW-Authenticate": 'Basic realm="tenure", Bearer realm="tenure"'}
    if isinstance(error, e.StorageUnavailable):
        _log.warning("storage unavailable: %s", error.detail)
    return problem_response(row.kind, error.detail, facts=row.facts(error), headers=headers)


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
    return problem_response(ProblemType.VALIDATION_ERROR, detail, facts={"errors": problems})


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
    kind = {404: NOT_FOUND, 405: ProblemType.METHOD_NOT_ALLOWED}.get(
        error.status_code, ProblemType.HTTP_ERROR
    )
    headers = dict(error.headers) if error.headers else {}
    if error.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
    return problem_response(
        kind, str(error.detail), status=error.status_code, headers=headers or None
    )


async def _unexpected(_: Request, error: Exception) -> JSONResponse:
    _log.exception("unhandled error", exc_info=error)
    return problem_response(
        ProblemType.INTERNAL_ERROR, "the service failed to answer; this is a bug"
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(e.TenureError, _domain_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


def describe(slug: str) -> ProblemType | None:
    return next((kind for kind in ALL_TYPES if kind.slug == slug), None)
