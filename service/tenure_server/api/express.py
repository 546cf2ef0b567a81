"""The express lane: a pure ASGI layer that answers the common case of the hot routes (acquire,
renew, batch renew, release, verify fence, batch verify, claim and complete a window) without
FastAPI's per-request work.

FastAPI spends more CPU matching routes, resolving dependencies, parsing and re-validating than
an acquire spends in asyncpg and PostgreSQL together (bench/README.md). This layer matches the
hot paths with one regular expression, validates the body with the route's own pydantic model in
one pass, and calls the same function the FastAPI route calls (`acquire_lease`, ...), rendering
domain errors with the same `domain_problem`. Whatever it is not sure of — a name or body the
model refuses, another content type, a client gone before the body arrived — it hands to
FastAPI untouched, with the body it read replayed, so every refusal is FastAPI's own answer and
the routes stay the one definition of the API (and of its OpenAPI document)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.datastructures import State
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure_server.api import fences, leases, windows
from tenure_server.api.dependencies import context_of
from tenure_server.api.problems import domain_problem
from tenure_server.api.schemas import (
    AcquireRequest,
    ReleaseRequest,
    RenewManyRequest,
    RenewRequest,
    VerifyManyRequest,
    VerifyRequest,
    WindowRequest,
)
from tenure_server.domain.errors import TenureError
from tenure_server.domain.names import NAME_PATTERN, WINDOW_PATTERN, check_window_key

# Called as action(context, *names in the path, body, receive).
Action = Callable[..., Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class _Lane:
    # The FastAPI route's path template: set as the scope's "route" (an object with a `path`,
    # as Starlette's routes are), by which `RequestEdge` labels the request's metrics.
    path: str
    model: type[BaseModel]
    action: Action


# Keyed by (collection, verb) of /v1/{collection}/{name}/{verb}; each is the FastAPI route with
# that template, whose `LeaseName`/`ResourceName` path parameter is NAME_PATTERN.
_LANES = {
    ("leases", "acquire"): _Lane("/v1/leases/{name}/acquire", AcquireRequest, leases.acquire_lease),
    ("leases", "renew"): _Lane("/v1/leases/{name}/renew", RenewRequest, leases.renew_lease),
    ("leases", "release"): _Lane("/v1/leases/{name}/release", ReleaseRequest, leases.release_lease),
    ("fences", "verify"): _Lane("/v1/fences/{resource}/verify", VerifyRequest, fences.verify_fence),
}
# Keyed by verb of /v1/jobs/{job}/windows/{window}/{verb}: `JobName` is NAME_PATTERN,
# `WindowKey` WINDOW_PATTERN.
_WINDOW_LANES = {
    verb: _Lane(f"/v1/jobs/{{job}}/windows/{{window}}/{verb}", WindowRequest, action)
    for verb, action in (("claim", windows.claim_window), ("complete", windows.complete_window))
}
# Paths without a name: the batch renew and the batch verify.
_FIXED = {
    "/v1/leases/renew": _Lane("/v1/leases/renew", RenewManyRequest, leases.renew_many_leases),
    "/v1/fences/verify": _Lane("/v1/fences/verify", VerifyManyRequest, fences.verify_many_fences),
}
_PATH = re.compile(r"/v1/(leases|fences)/([^/]+)/(acquire|renew|release|verify)")
_WINDOW_PATH = re.compile(r"/v1/jobs/([^/]+)/windows/([^/]+)/(claim|complete)")
_NAME = re.compile(NAME_PATTERN)
_WINDOW = re.compile(WINDOW_PATTERN)


def _lane(path: str) -> tuple[_Lane | None, tuple[str, ...]]:
    """The lane for a path, and the names in it; no lane for a name the route's path
    parameters would refuse."""
    fixed = _FIXED.get(path)
    if fixed is not None:
        return fixed, ()
    match = _PATH.fullmatch(path)
    if match is not None:
        if not _NAME.fullmatch(match[2]):
            return None, ()
        return _LANES.get((match[1], match[3])), (match[2],)
    match = _WINDOW_PATH.fullmatch(path)
    if match is None or not _NAME.fullmatch(match[1]) or not _window_key(match[2]):
        return None, ()
    return _WINDOW_LANES[match[3]], (match[1], match[2])


def _window_key(key: str) -> bool:
    """Whether the route's `WindowKey` path parameter accepts `key`."""
    try:
        check_window_key(key)
    except ValueError:
        return False
    return _WINDOW.fullmatch(key) is not None


def _replay(messages: Sequence[Message], receive: Receive) -> Receive:
    """A receive that gives back the messages already read, then the server's."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


def _headers(scope: Scope) -> tuple[str | None, bytes | None]:
    """The Authorization and Content-Type headers (the server lower-cases names)."""
    authorization: str | None = None
    content_type: bytes | None = None
    for key, value in scope["headers"]:
        if key == b"authorization":
            authorization = value.decode("latin-1")
        elif key == b"content-type":
            content_type = value
    return authorization, content_type


class Express:
    """Answers POSTs to the hot routes' paths whose name and JSON body the route would accept;
    hands everything else to `app` (FastAPI) unchanged. Sits inside `RequestEdge`, so body size
    limits, the request log and the latency histogram apply alike."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lane: _Lane | None = None
        names: tuple[str, ...] = ()
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            lane, names = _lane(scope["path"])
        if lane is None:
            await self.app(scope, receive, send)
            return
        authorization, content_type = _headers(scope)
        messages: list[Message] = []
        body = await _read_body(receive, messages)
        parsed = _parse(lane.model, body, content_type)
        if parsed is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        scope["route"] = lane
        state: State = scope["app"].state
        try:
            context = context_of(state, authorization)
            response = await lane.action(context, *names, parsed, receive)
        except TenureError as error:
            response = domain_problem(error)
        await response(scope, receive, send)


async def _read_body(receive: Receive, messages: list[Message]) -> bytes | None:
    """The whole body, keeping the messages read in `messages`; None if the client went away."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _parse(model: type[BaseModel], body: bytes | None, content_type: bytes | None) -> Any:
    """The body as `model`, where FastAPI would read it as JSON and accept it; else None."""
    # FastAPI reads a body as JSON without a Content-Type or with a JSON one; only the plain
    # spelling takes the lane, any other goes to FastAPI to decide.
    if not body or content_type not in (None, b"application/json"):
        return None
    try:
        return model.model_validate_json(body)
    except (ValidationError, TenureError):  # the models' validators raise InvalidInput
        return None
