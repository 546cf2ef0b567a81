"""`FencingMiddleware`: an ASGI app refuses writes that carry a stale fencing token.

    app.add_middleware(FencingMiddleware, store=PostgresFenceStore(pool))      # FastAPI/Starlette
    app = FencingMiddleware(app, store=MemoryFenceStore())                     # any ASGI app

A pure ASGI class (no Starlette `BaseHTTPMiddleware`, no framework import): HTTP requests that
need a token (by default POST, PUT, PATCH and DELETE) are checked against the store before the
app sees them; a refusal is written straight to `send` as RFC 9457 `application/problem+json`
and the app never runs:

    no `Fencing-Token`                           428 /problems/fencing-token-required
    malformed, negative, > 2**53-1, sent twice   400 /problems/fencing-token-malformed
    lower than the highest accepted              409 /problems/stale-generation  (+ highest)
    resource fenced by another lease             409 /problems/fence-lease-mismatch  (+ lease)
    generation never handed out (remote store)   422 /problems/unknown-generation
    store unreachable: refused, not let through  503 /problems/fence-store-unavailable

An accepted request runs holding the store's lock on its resource until the app has finished
sending the response (and any background task it runs), so in one process a request with
generation 7 that passed the check cannot write after one with generation 8. `accepted_token()`
tells the app which token was accepted; `tenure.pg.PostgresFenceStore.connection` uses it to
check again in the handler's own transaction. A `FencingError` raised by the app before it starts
its response (such as that check refusing) is answered like the middleware's own refusals.

The resource key decides what one fence protects. The default is the request path: the
middleware runs before any router, so it cannot see route templates or their parameters. Pass
`resource=` for anything else, e.g. one fence for a whole API — `lambda scope: "payments"` — or
per tenant — `lambda scope: "payments:" + scope["path"].split("/")[2]`. A coarse key refuses a
stale writer everywhere once a newer one wrote anywhere; a fine key only where it wrote.
Non-HTTP scopes (lifespan, websocket) pass through unchecked.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from tenure._fencing import (
    FencedByAnotherLease,
    FencedRequest,
    FenceStore,
    FenceStoreUnavailable,
    FencingError,
    FencingTokenMalformed,
    FencingTokenMissing,
    StaleFencingToken,
    UnknownFencingGeneration,
    _accepting,
    parse_fencing_token,
)
from tenure._tokens import FENCING_HEADER
from tenure.problems import MEDIA_TYPE, ErrorProblem, ProblemType, problem_of

__all__ = ["DEFAULT_MISSING_STATUS", "UNSAFE_METHODS", "FencingMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_MISSING_STATUS = 428  # Precondition Required (RFC 6585)
PROBLEM_JSON = MEDIA_TYPE.encode("ascii")
_HEADER = FENCING_HEADER.lower().encode("ascii")
# Seconds a client should wait before retrying when the store could not be asked.
_UNAVAILABLE_RETRY_AFTER = 1


# The one table from refusal to HTTP answer; the types are those of the catalogue, so the types
# shared with the Tenure service (stale-generation, …) mean, and say, the same.
_PROBLEMS: Mapping[type[FencingError], ErrorProblem] = {
    FencingTokenMissing: ErrorProblem(ProblemType.FENCING_TOKEN_REQUIRED),
    FencingTokenMalformed: ErrorProblem(ProblemType.FENCING_TOKEN_MALFORMED),
    StaleFencingToken: ErrorProblem(ProblemType.STALE_GENERATION, lambda x: {"highest": x.highest}),
    FencedByAnotherLease: ErrorProblem(
        ProblemType.FENCE_LEASE_MISMATCH, lambda x: {"lease": x.lease}
    ),
    UnknownFencingGeneration: ErrorProblem(
        ProblemType.UNKNOWN_GENERATION, lambda x: {"current_generation": x.current_generation}
    ),
    FenceStoreUnavailable: ErrorProblem(ProblemType.FENCE_STORE_UNAVAILABLE),
}
_UNKNOWN = ErrorProblem(ProblemType.FENCING_REFUSED)


def _unsafe(scope: Scope) -> bool:
    return str(scope.get("method", "")).upper() in UNSAFE_METHODS


def _path(scope: Scope) -> str:
    return str(scope["path"])


class FencingMiddleware:
    """Refuse requests whose fencing token is missing, malformed or stale; see the module doc.

    `store`: a `FenceStore` (share one per process). `resource(scope) -> str`: the resource key
    (default: the request path). `require(scope) -> bool`: whether the request needs a token
    (default: unsafe methods). `missing_status`: the status of a request without one (428).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        store: FenceStore,
        resource: Callable[[Scope], str] | None = None,
        require: Callable[[Scope], bool] | None = None,
        missing_status: int = DEFAULT_MISSING_STATUS,
    ) -> None:
        if not isinstance(store, FenceStore):
            raise TypeError("store must be a fence store (guard() and advance())")
        if resource is not None and not callable(resource):
            raise TypeError("resource must be a callable taking the ASGI scope, or None")
        if require is not None and not callable(require):
            raise TypeError("require must be a callable taking the ASGI scope, or None")
        if isinstance(missing_status, bool) or not isinstance(missing_status, int):
            raise TypeError("missing_status must be an int")
        if not 400 <= missing_status <= 499:
            raise ValueError("missing_status must be a 4xx status")
        self.app = app
        self.store = store
        self.resource = resource or _path
        self.require = require or _unsafe
        self.missing_status = missing_status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.require(scope):
            await self._run(scope, receive, send)
            return
        try:
            lease, generation = parse_fencing_token(_token_value(scope))
        except FencingError as refused:
            await self._refuse(send, refused)
            return
        resource = self.resource(scope)
        if not isinstance(resource, str) or not resource:
            raise ValueError(f"the resource callable returned {resource!r}, not a key")
        async with self.store.guard(resource):
            try:
                accepted = await self.store.advance(resource, lease, generation)
            except FencingError as refused:
                await self._refuse(send, refused)
                return
            with _accepting(FencedRequest(resource, lease, accepted)):
                await self._run(scope, receive, send)

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app; a `FencingError` it raises before starting its response is answered as a
        refusal (after that, the status is sent and the error propagates)."""
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except FencingError as refused:
            if started:
                raise
            await self._refuse(send, refused)

    async def _refuse(self, send: Send, refused: FencingError) -> None:
        row = problem_of(_PROBLEMS, refused) or _UNKNOWN
        status = self.missing_status if isinstance(refused, FencingTokenMissing) else None
        problem = row.kind.body(refused.detail, status=status, facts=row.facts(refused))
        body = json.dumps(problem).encode()
        headers = [(b"content-type", PROBLEM_JSON), (b"content-length", str(len(body)).encode())]
        if isinstance(refused, FenceStoreUnavailable):
            headers.append((b"retry-after", str(_UNAVAILABLE_RETRY_AFTER).encode()))
        await send({"type": "http.response.start", "status": problem["status"], "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _token_value(scope: Scope) -> str | None:
    """The one `Fencing-Token` value; None when absent. Sent more than once (even with equal
    values) is malformed: two tokens cannot both be the request's."""
    values = [value for name, value in scope.get("headers", ()) if name.lower() == _HEADER]
    if not values:
        return None
    if len(values) > 1:
        raise FencingTokenMalformed(f"{FENCING_HEADER} was sent {len(values)} times")
    # latin-1 maps every byte to one character; parse_token then refuses anything non-ASCII.
    value: str = values[0].decode("latin-1")
    return value
