"""The express lane: a pure ASGI layer that answers the common case of the hot routes (acquire,
renew, batch renew, release, verify fence, batch verify, claim and complete a window) without
FastAPI's per-request work.

FastAPI spends more CPU matching routes, resolving dependencies, parsing and re-validating than
an acquire spends in asyncpg and PostgreSQL together (bench/README.md). This layer reads the
table FastAPI's hot routes are built from (api/hot_routes.py): it matches a path with the
route's template compiled as Starlette compiles it, validates the path parameters with the
route's own types and the body with its own pydantic model (a batch body first with the route's
cheaper decoder, which answers only for bodies the model accepts alike), and calls the route's
action, rendering domain errors with the same `domain_problem`. Whatever it is not sure of — a path
parameter or body the route refuses, another content type, a client gone before the body
arrived — it hands to FastAPI untouched, with the body it read replayed, so every refusal is
FastAPI's own answer."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure_server.api.dependencies import context_of
from tenure_server.api.hot_routes import HotRoute
from tenure_server.api.problems import domain_problem
from tenure_server.domain.errors import TenureError


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


# A hot route's template, compiled as Starlette compiles it, and the route.
_Template = tuple[re.Pattern[str], HotRoute[Any, Any]]


class Express:
    """Answers requests to the hot routes whose path parameters and JSON body the route would
    accept; hands everything else to `app` (FastAPI) unchanged. Sits inside `RequestEdge`, so body
    size limits, the request log and the latency histogram apply alike."""

    def __init__(self, app: ASGIApp, routes: Iterable[HotRoute[Any, Any]]) -> None:
        self.app = app
        # A template without parameters is its one path: found by lookup, its (no) parameters
        # validated once. The others are kept by method and last segment, which must be fixed,
        # in the table's order (the order FastAPI tries them in), so that a request tries only
        # the templates that could match it. (A path with a newline after it, which Starlette's
        # `$` also takes, goes to FastAPI.)
        self._fixed: dict[tuple[str, str], tuple[HotRoute[Any, Any], Any]] = {}
        self._templates: dict[tuple[str, str], list[_Template]] = {}
        for route in routes:
            pattern, _, parameters = compile_path(route.path)
            last = route.path.rpartition("/")[2]
            if not parameters:
                self._fixed[route.method, route.path] = (route, route.path_of(()))
            elif "{" in last:
                raise ValueError(f"{route.path}: the lane needs a fixed last segment")
            else:
                self._templates.setdefault((route.method, last), []).append((pattern, route))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = None
        if scope["type"] == "http" and not scope.get("root_path"):
            found = self._match(scope["method"], scope["path"])
        if found is None:
            await self.app(scope, receive, send)
            return
        route, path = found
        authorization, content_type = _headers(scope)
        messages: list[Message] = []
        body = await _read_body(receive, messages)
        parsed = _parse(route, body, content_type)
        if parsed is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        # Starlette's routes are objects with a `path`, the template, as HotRoute is: by it
        # `RequestEdge` labels the request's metrics.
        scope["route"] = route
        try:
            context = context_of(scope, authorization)
            response = await route.action(context, path, parsed, receive)
        except TenureError as error:
            response = domain_problem(error)
        await response(scope, receive, send)

    def _match(self, method: str, path: str) -> tuple[HotRoute[Any, Any], Any] | None:
        """The route FastAPI would serve `method path` with, if a hot one, and its path
        parameters; None as well for parameters that route refuses (FastAPI answers them)."""
        fixed = self._fixed.get((method, path))
        if fixed is not None:
            return fixed
        for pattern, route in self._templates.get((method, path.rpartition("/")[2]), ()):
            match = pattern.match(path)
            if match is not None:
                try:
                    return route, route.path_of(match.groups())
                except ValidationError:
                    return None
        return None


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


def _parse(
    route: HotRoute[Any, Any], body: bytes | None, content_type: bytes | None
) -> object | None:
    """The body as the route's action reads it, where FastAPI would read it as JSON and accept
    it; else None."""
    # FastAPI reads a body as JSON without a Content-Type or with a JSON one; only the plain
    # spelling takes the lane, any other goes to FastAPI to decide.
    if not body or content_type not in (None, b"application/json"):
        return None
    decoded: object | None = None if route.decode is None else route.decode(body)
    if decoded is not None:
        return decoded
    try:
        decoded = route.body.model_validate_json(body)
    except (ValidationError, TenureError):  # the models' validators raise InvalidInput
        return None
    return decoded
