"""Error answers of the API read into exceptions, without I/O: one decoder per problem type of
`tenure.problems` that the service answers, and the plain errors of proxies in front of it.

`error_from_response` reads any non-2xx answer; `refusal` reads a problem inside a 200 answer
(one refused item of a batch).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from tenure import _errors as errors
from tenure._fields import moment, optional_int, optional_number, optional_str, typed
from tenure.problems import TYPE_PREFIX, ProblemType

__all__ = [
    "DECODERS",
    "error_from_response",
    "json_object",
    "refusal",
    "retry_after",
]

Body = Mapping[str, Any]
Problem = dict[str, Any]
Decoder = Callable[[str, int, Problem, Mapping[str, str]], errors.TenureError]


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The `Retry-After` header in seconds (HTTP dates are not used by the service)."""
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def json_object(content: bytes) -> dict[str, Any] | None:
    """The body as a JSON object; None when it is not one."""
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


def error_from_response(
    status: int, headers: Mapping[str, str], content: bytes
) -> errors.TenureError:
    """The exception for a non-2xx answer, from its RFC 9457 problem when it has one."""
    body = json_object(content)
    if body is None or not isinstance(body.get("type"), str):
        return _plain_error(status, headers, content)
    return _problem_error(status, body, headers)


def refusal(problem: Body) -> errors.TenureError:
    """The exception of a refusal inside a 200 answer, as if it had been a single answer."""
    status = problem.get("status")
    if not isinstance(status, int) or not isinstance(problem.get("type"), str):
        raise ValueError(f"malformed problem {problem!r}")
    return _problem_error(status, dict(problem), {})


def _problem_error(
    status: int, body: dict[str, Any], headers: Mapping[str, str]
) -> errors.TenureError:
    """The exception a problem's `type` names (`type` is a string)."""
    kind: str = body["type"]
    detail = body.get("detail")
    detail = detail if isinstance(detail, str) else f"HTTP {status}: {kind}"
    ours = kind.startswith(TYPE_PREFIX)
    decoder = DECODERS.get(kind.removeprefix(TYPE_PREFIX)) if ours else None
    if decoder is None:
        return errors.TenureError(detail, status=status, problem=body)
    try:
        return decoder(detail, status, body, headers)
    except (ValueError, TypeError) as error:
        message = f"{detail} (malformed {kind} problem: {error})"
        return errors.UnexpectedResponse(message, status=status, problem=body)


def _plain_error(status: int, headers: Mapping[str, str], content: bytes) -> errors.TenureError:
    text = content[:200].decode("utf-8", "replace").strip()
    detail = f"HTTP {status}" + (f": {text}" if text else "")
    if status in (502, 503, 504):
        return errors.ServiceUnavailable(detail, retry_after=retry_after(headers), status=status)
    return errors.TenureError(detail, status=status)


def _errors(problem: Problem) -> tuple[Mapping[str, str], ...]:
    items = problem.get("errors", [])
    if not isinstance(items, list):
        raise ValueError("field 'errors' is not a list")
    return tuple(
        {"field": str(item.get("field", "")), "message": str(item.get("message", ""))}
        for item in items
        if isinstance(item, dict)
    )


# Problem decoders: one per problem type the service answers to a client ------------------------


def _simple(cls: type[errors.TenureError]) -> Decoder:
    def decode(
        detail: str, status: int, problem: Problem, _: Mapping[str, str]
    ) -> errors.TenureError:
        return cls(detail, status=status, problem=problem)

    return decode


def _lease_held(d: str, s: int, p: Problem, h: Mapping[str, str]) -> errors.TenureError:
    seconds = optional_number(p, "retry_after_seconds")
    if seconds is None:
        seconds = retry_after(h) or 0.0
    return errors.LeaseHeld(
        d,
        holder=typed(p, "holder", str),
        expires_at=moment(p, "expires_at"),
        retry_after=seconds,
        status=s,
        problem=p,
    )


def _storage_unavailable(d: str, s: int, p: Problem, h: Mapping[str, str]) -> errors.TenureError:
    seconds = optional_number(p, "retry_after_seconds")
    return errors.ServiceUnavailable(
        d, retry_after=retry_after(h) if seconds is None else seconds, status=s, problem=p
    )


# The service's own failures (internal-error, not-found, …) and the FencingMiddleware's refusals
# (answered by downstream apps, never by the service) have no decoder: they are `TenureError`.
DECODERS: Mapping[str, Decoder] = {
    ProblemType.VALIDATION_ERROR.slug: lambda d, s, p, _: errors.InvalidRequest(
        d, errors=_errors(p), status=s, problem=p
    ),
    ProblemType.LEASE_HELD.slug: _lease_held,
    ProblemType.LEASE_LOST.slug: lambda d, s, p, _: errors.LeaseLost(
        d, generation=optional_int(p, "generation"), status=s, problem=p
    ),
    ProblemType.LEASE_NOT_FOUND.slug: _simple(errors.LeaseNotFound),
    ProblemType.GENERATION_EXHAUSTED.slug: lambda d, s, p, _: errors.GenerationExhausted(
        d, generation=optional_int(p, "generation"), status=s, problem=p
    ),
    ProblemType.WINDOW_NOT_FOUND.slug: _simple(errors.WindowNotFound),
    ProblemType.JOB_NOT_FOUND.slug: _simple(errors.JobNotFound),
    ProblemType.WINDOW_COMPLETED.slug: lambda d, s, p, _: errors.WindowCompleted(
        d, completed_at=moment(p, "completed_at"), status=s, problem=p
    ),
    ProblemType.WINDOW_NOT_CLAIMED.slug: _simple(errors.WindowNotClaimed),
    ProblemType.WINDOW_LEASE_MISMATCH.slug: lambda d, s, p, _: errors.WindowLeaseMismatch(
        d, lease=typed(p, "lease", str), status=s, problem=p
    ),
    ProblemType.WINDOW_NOT_DUE.slug: lambda d, s, p, _: errors.WindowNotDue(
        d, occurrence=moment(p, "occurrence"), now=moment(p, "now"), status=s, problem=p
    ),
    ProblemType.STALE_GENERATION.slug: lambda d, s, p, _: errors.StaleGeneration(
        d, highest=typed(p, "highest", int), status=s, problem=p
    ),
    ProblemType.FENCE_LEASE_MISMATCH.slug: lambda d, s, p, _: errors.FenceLeaseMismatch(
        d, lease=typed(p, "lease", str), status=s, problem=p
    ),
    ProblemType.UNKNOWN_GENERATION.slug: lambda d, s, p, _: errors.UnknownGeneration(
        d, current_generation=optional_int(p, "current_generation"), status=s, problem=p
    ),
    ProblemType.STORAGE_UNAVAILABLE.slug: _storage_unavailable,
    ProblemType.SHUTTING_DOWN.slug: lambda d, s, p, h: errors.ShuttingDown(
        d, retry_after=retry_after(h), status=s, problem=p
    ),
    ProblemType.TOO_MANY_STREAMS.slug: lambda d, s, p, h: errors.TooManyStreams(
        d,
        limit=optional_int(p, "limit"),
        per=optional_str(p, "per"),
        retry_after=retry_after(h),
        status=s,
        problem=p,
    ),
    ProblemType.UNAUTHENTICATED.slug: _simple(errors.Unauthenticated),
    ProblemType.FORBIDDEN.slug: _simple(errors.Forbidden),
    ProblemType.HOLDING_OF_ANOTHER_PRINCIPAL.slug: _simple(errors.HoldingOfAnotherPrincipal),
    ProblemType.RESERVED_NAME.slug: _simple(errors.ReservedName),
    ProblemType.RATE_LIMITED.slug: lambda d, s, p, h: errors.RateLimited(
        d, retry_after=retry_after(h), status=s, problem=p
    ),
    ProblemType.PAYLOAD_TOO_LARGE.slug: _simple(errors.PayloadTooLarge),
}
