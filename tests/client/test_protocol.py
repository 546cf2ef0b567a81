"""The sans-IO protocol: requests built for each operation, and every answer decoded into a model
or the exception its problem `type` names. No server: answers are given as bytes."""

from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime
from typing import Any

import pytest

from tenure import (
    FenceLeaseMismatch,
    Forbidden,
    GenerationExhausted,
    HoldingOfAnotherPrincipal,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    PayloadTooLarge,
    RateLimited,
    ReservedName,
    ServiceUnavailable,
    ShuttingDown,
    StaleGeneration,
    TenureError,
    TooManyStreams,
    Unauthenticated,
    UnexpectedResponse,
    UnknownGeneration,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
    WindowNotDue,
    WindowNotFound,
)
from tenure import _protocol as P
from tenure._error_answers import DECODERS
from tenure._models import Lease, Page, Window

MOMENT = "2026-09-25T03:05:00.123456+00:00"
LEASE = {
    "name": "close-day",
    "holder": "host:1:abcd1234",
    "generation": 7,
    "ttl_seconds": 90.0,
    "acquired_at": "2026-09-25T03:05:00.123456Z",
    "renewed_at": MOMENT,
    "expires_at": MOMENT,
    "held": True,
    "expires_in_seconds": 89.5,
}
WINDOW = {
    "job": "close-day",
    "window": "2026-09-24",
    "lease": "close-day",
    "holder": "host:1:abcd1234",
    "generation": 7,
    "attempt": 2,
    "started_at": MOMENT,
    "completed_at": None,
    "status": "running",
}


def _problem(slug: str, status: int, **facts: Any) -> bytes:
    body = {"type": f"/problems/{slug}", "title": slug, "status": status, "detail": f"d:{slug}"}
    return json.dumps({**body, **facts}).encode()


def _error(status: int, content: bytes, headers: dict[str, str] | None = None) -> TenureError:
    with pytest.raises(TenureError) as caught:
        P.decode_response(P.get_lease("x"), status, headers or {}, content)
    return caught.value


def test_lease_held_carries_holder_expiry_and_retry_after() -> None:
    """lease-held decodes to LeaseHeld with the holder, expiry and seconds to retry after."""
    error = _error(
        409,
        _problem("lease-held", 409, holder="b", expires_at=MOMENT, retry_after_seconds=12.5),
        {"retry-after": "13"},
    )
    assert isinstance(error, LeaseHeld)
    assert (error.holder, error.retry_after, error.status) == ("b", 12.5, 409)
    assert error.expires_at == datetime(2026, 9, 25, 3, 5, 0, 123456, tzinfo=UTC)
    assert error.detail == "d:lease-held"
    assert error.type == "/problems/lease-held"


@pytest.mark.parametrize(
    ("slug", "status", "facts", "kind", "fields"),
    [
        ("lease-lost", 409, {"generation": 3}, LeaseLost, {"generation": 3}),
        ("lease-not-found", 404, {}, LeaseNotFound, {}),
        (
            "generation-exhausted",
            409,
            {"generation": 2**53 - 1},
            GenerationExhausted,
            {"generation": 2**53 - 1},
        ),
        ("window-not-found", 404, {}, WindowNotFound, {}),
        (
            "window-completed",
            409,
            {"completed_at": MOMENT},
            WindowCompleted,
            {"completed_at": datetime.fromisoformat(MOMENT)},
        ),
        ("window-not-claimed", 409, {}, WindowNotClaimed, {}),
        ("window-lease-mismatch", 409, {"lease": "other"}, WindowLeaseMismatch, {"lease": "other"}),
        (
            "window-not-due",
            409,
            {"occurrence": MOMENT, "now": MOMENT},
            WindowNotDue,
            {"occurrence": datetime.fromisoformat(MOMENT), "now": datetime.fromisoformat(MOMENT)},
        ),
        ("stale-generation", 409, {"highest": 9}, StaleGeneration, {"highest": 9}),
        ("fence-lease-mismatch", 409, {"lease": "o"}, FenceLeaseMismatch, {"lease": "o"}),
        (
            "unknown-generation",
            422,
            {"current_generation": 4},
            UnknownGeneration,
            {"current_generation": 4},
        ),
        (
            "unknown-generation",
            422,
            {"current_generation": None},
            UnknownGeneration,
            {"current_generation": None},
        ),
        (
            "validation-error",
            422,
            {"errors": [{"field": "ttl_seconds", "message": "too big"}]},
            InvalidRequest,
            {"errors": ({"field": "ttl_seconds", "message": "too big"},)},
        ),
        (
            "storage-unavailable",
            503,
            {"retry_after_seconds": 2},
            ServiceUnavailable,
            {"retry_after": 2.0},
        ),
        ("shutting-down", 503, {}, ShuttingDown, {}),
        (
            "too-many-streams",
            503,
            {"limit": 25, "per": "principal"},
            TooManyStreams,
            {"limit": 25, "per": "principal"},
        ),
        ("too-many-streams", 503, {}, TooManyStreams, {"limit": None, "per": None}),
        ("unauthenticated", 401, {}, Unauthenticated, {}),
        ("forbidden", 403, {}, Forbidden, {}),
        ("holding-of-another-principal", 403, {}, HoldingOfAnotherPrincipal, {}),
        ("reserved-name", 403, {"name": "tenure.monitor"}, ReservedName, {}),
        ("rate-limited", 429, {}, RateLimited, {}),
        ("payload-too-large", 413, {}, PayloadTooLarge, {}),
    ],
)
def test_every_problem_type_decodes_to_its_exception(
    slug: str, status: int, facts: dict[str, Any], kind: type[TenureError], fields: dict[str, Any]
) -> None:
    """Each problem type of the API maps to its own exception class, with its extra fields."""
    error = _error(status, _problem(slug, status, **facts))
    assert type(error) is kind
    assert error.status == status
    assert error.detail == f"d:{slug}"
    assert error.problem["type"] == f"/problems/{slug}"
    for name, value in fields.items():
        assert getattr(error, name) == value


def test_the_client_knows_every_problem_type_the_service_answers() -> None:
    """No problem type of the service falls through to the base class, except those that are
    the service's own failures or that nobody receives."""
    from tenure_server.api.problems import ALL_TYPES

    generic = {"internal-error", "not-found", "method-not-allowed", "http-error"}
    nobody_reads = {"request-abandoned"}  # answered to a caller that already went away
    served = {kind.slug for kind in ALL_TYPES} - generic - nobody_reads
    assert served <= set(DECODERS)


def test_unknown_problem_type_is_the_base_class_with_the_raw_problem() -> None:
    """A problem type this client does not know is a TenureError that keeps the whole body."""
    error = _error(500, _problem("internal-error", 500, extra=1))
    assert type(error) is TenureError
    assert error.problem["extra"] == 1
    assert error.status == 500


def test_gateway_errors_without_problem_are_service_unavailable() -> None:
    """A 502/503/504 from a proxy (no problem body) is ServiceUnavailable with its Retry-After."""
    for status in (502, 503, 504):
        error = _error(status, b"<html>bad gateway</html>", {"retry-after": "3"})
        assert isinstance(error, ServiceUnavailable)
        assert (error.status, error.retry_after) == (status, 3.0)


def test_other_statuses_without_problem_are_the_base_class() -> None:
    """A non-problem error answer keeps its status and the start of its body."""
    error = _error(401, b"unauthorized")
    assert type(error) is TenureError
    assert error.status == 401
    assert "unauthorized" in error.detail


def test_malformed_known_problem_is_an_unexpected_response() -> None:
    """A known problem type missing its fields is UnexpectedResponse, not a half-built error."""
    error = _error(409, _problem("lease-held", 409, holder="b"))
    assert isinstance(error, UnexpectedResponse)
    assert error.problem["type"] == "/problems/lease-held"


def test_success_with_unreadable_body_is_an_unexpected_response() -> None:
    """A 2xx whose body is not the documented object raises UnexpectedResponse."""
    for content in (b"not json", b"[1, 2]", json.dumps({**LEASE, "generation": "7"}).encode()):
        with pytest.raises(UnexpectedResponse):
            P.decode_response(P.get_lease("x"), 200, {}, content)


def test_errors_survive_pickling() -> None:
    """Errors with keyword fields pickle and unpickle whole (Celery results, multiprocessing)."""
    error = _error(409, _problem("stale-generation", 409, highest=9))
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes, just made
    assert type(copy) is StaleGeneration
    assert (copy.highest, copy.detail, copy.status) == (9, "d:stale-generation", 409)


def test_lease_window_and_page_decode_with_aware_datetimes() -> None:
    """Models parse every field, datetimes timezone-aware, pages with their cursor."""
    lease = P.decode_response(P.get_lease("x"), 200, {}, json.dumps(LEASE).encode())
    assert lease == Lease.from_json(LEASE)
    assert lease.acquired_at.tzinfo is not None
    assert (lease.generation, lease.held, lease.expires_in_seconds) == (7, True, 89.5)
    window = Window.from_json(WINDOW)
    assert (window.attempt, window.completed, window.status) == (2, False, "running")
    page = P.decode_response(
        P.list_windows("close-day", 10, None),
        200,
        {},
        json.dumps({"items": [WINDOW], "next_cursor": "abc"}).encode(),
    )
    assert page == Page(items=(window,), next_cursor="abc")


def test_requests_for_each_operation() -> None:
    """Each operation is the documented method, path and body of the API v1."""
    assert P.acquire("a", "h", 90).json == {"holder": "h", "ttl_seconds": 90}
    assert P.acquire("a", "h", 90).path == "/v1/leases/a/acquire"
    waiting = P.acquire("a", "h", 90, wait=12.5)
    assert waiting.json == {"holder": "h", "ttl_seconds": 90, "wait_seconds": 12.5}
    assert waiting.wait == 12.5
    renew = P.renew("a", "h", 3, 90)
    assert (renew.method, renew.path) == ("POST", "/v1/leases/a/renew")
    assert renew.json == {"holder": "h", "generation": 3, "ttl_seconds": 90}
    release = P.release("a", "h", 3, "4711")
    assert (release.path, release.json) == (
        "/v1/leases/a/release",
        {"holder": "h", "generation": 3, "grant": "4711"},
    )
    assert (P.get_lease("a").method, P.get_lease("a").path) == ("GET", "/v1/leases/a")
    listing = P.list_leases("close", 5, "cur")
    assert listing.params == {"prefix": "close", "limit": 5, "cursor": "cur"}
    claim = P.claim_window("job", "2026-09-25T00:05:00+00:00", "job", "h", 2)
    assert claim.path == "/v1/jobs/job/windows/2026-09-25T00%3A05%3A00%2B00%3A00/claim"
    assert claim.json == {"holder": "h", "lease": "job", "generation": 2}
    assert P.complete_window("j", "w", "l", "h", 2).path == "/v1/jobs/j/windows/w/complete"
    assert P.get_window("j", "w").path == "/v1/jobs/j/windows/w"
    assert P.verify_fence("db", "l", 4).json == {"lease": "l", "generation": 4}
    assert P.verify_fence("db", "l", 4).path == "/v1/fences/db/verify"


def test_a_window_is_resolved_by_the_service_clock_with_the_early_tolerance() -> None:
    """The request sends no instant and the early tolerance: the service applies it at the
    database clock. The window is the one answered, whatever this host's clock says, and the
    answer's `now` is the database's."""
    cron, tz = "5 0 * * *", "America/Sao_Paulo"
    request = P.resolve_window(cron, tz, "previous_day", 2.0)
    assert (request.method, request.path) == ("POST", "/v1/windows/resolve")
    assert request.json == {
        "cron": cron,
        "timezone": tz,
        "key": "previous_day",
        "early_tolerance_seconds": 2.0,
    }
    answer = {
        "occurrence": "2026-09-26T00:05:00-03:00",
        "window": "2026-09-25",
        "next_occurrence": "2026-09-27T00:05:00-03:00",
        "now": "2026-09-26T03:04:59Z",
    }
    resolution = P.decode_response(request, 200, {}, json.dumps(answer).encode())
    assert resolution.window == "2026-09-25"
    assert resolution.now == datetime(2026, 9, 26, 3, 4, 59, tzinfo=UTC)


def test_a_batch_verify_decodes_each_refusal_as_its_single_answer() -> None:
    """Each refused entry's problem becomes the exception a single verify would raise; an entry
    whose problem is not a problem makes the whole answer unreadable."""
    request = P.verify_fences(["a", "b"], "job", 2)
    assert request.path == "/v1/fences/verify"
    assert request.json == {
        "fences": [
            {"resource": "a", "lease": "job", "generation": 2},
            {"resource": "b", "lease": "job", "generation": 2},
        ]
    }
    stale = {"type": "/problems/stale-generation", "title": "t", "status": 409, "detail": "d"}
    refused = {"resource": "b", "lease": "job", "generation": 2, "problem": stale | {"highest": 3}}
    body = {"accepted": [], "refused": [refused]}
    (refusal,) = P.decode_response(request, 200, {}, json.dumps(body).encode()).refused
    assert isinstance(refusal.error, StaleGeneration)
    assert (refusal.resource, refusal.error.highest, refusal.error.status) == ("b", 3, 409)
    refused["problem"] = {"type": "/problems/stale-generation", "detail": "no status"}
    with pytest.raises(UnexpectedResponse):
        P.decode_response(request, 200, {}, json.dumps(body).encode())


def test_names_cannot_change_the_route() -> None:
    """A name with "/" is quoted into one path segment; "." and ".." are refused."""
    assert P.get_lease("a/../b").path == "/v1/leases/a%2F..%2Fb"
    for name in ("", ".", ".."):
        with pytest.raises(ValueError, match="not a lease name"):
            P.get_lease(name)


def test_a_window_state_is_decoded_when_sent_and_derived_from_status_when_not() -> None:
    """`state` (issue 26) tells an interrupted run from one in progress; an older service sends
    only `status`, and a `state` this SDK does not know is refused."""
    assert Window.from_json(WINDOW | {"state": "interrupted"}).state == "interrupted"
    assert Window.from_json(WINDOW).state == "running"
    completed = WINDOW | {"status": "completed", "completed_at": MOMENT}
    assert Window.from_json(completed).state == "completed"
    with pytest.raises(ValueError, match="state"):
        Window.from_json(WINDOW | {"state": "abandoned"})
