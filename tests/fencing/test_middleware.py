"""FencingMiddleware against a tiny ASGI app, through httpx.ASGITransport: every bad token gets
its documented problem (never a 500) and the app never runs on a refusal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tenure._fencing import (
    FencedRequest,
    FenceStoreUnavailable,
    MemoryFenceStore,
    StaleFencingToken,
    accepted_token,
)
from tenure._middleware import FencingMiddleware, Message, Receive, Scope, Send

PROBLEM_JSON = "application/problem+json"


class App:
    """Answers 200 with the token it ran under; records every call."""

    def __init__(self) -> None:
        self.calls: list[FencedRequest | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls.append(accepted_token())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def client(app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def post(
    middleware: FencingMiddleware, headers: list[tuple[str, str]] | None = None
) -> httpx.Response:
    async with client(middleware) as http:
        return await http.post("/payments/42", headers=headers or [])


def assert_problem(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM_JSON
    body: dict[str, Any] = response.json()
    assert (body["type"], body["status"]) == (f"/problems/{kind}", status)
    assert body["title"]
    assert body["detail"]
    return body


async def test_missing_status_is_configurable() -> None:
    """`missing_status` changes the status of the missing-token problem, not its type."""
    app = App()
    response = await post(FencingMiddleware(app, store=MemoryFenceStore(), missing_status=401))
    assert_problem(response, 401, "fencing-token-required")


# The other refusals (no token, malformed, sent twice, stale, another lease, which methods need
# a token) are in the table both clients' middleware tests read:
# tests/shared/fencing_middleware_cases.json, run by test_shared_middleware_cases.py.


@pytest.mark.parametrize("value", ["x/١", "é/1"])
async def test_non_ascii_tokens_get_400_never_500(value: str) -> None:
    """A token with non-ASCII bytes (Arabic-Indic digits, an accented name) is answered 400
    fencing-token-malformed, and the app never runs."""
    app = App()
    middleware = FencingMiddleware(app, store=MemoryFenceStore())
    # httpx sends ASCII only: put the raw bytes in the scope ourselves.
    response = await raw_post(middleware, [(b"fencing-token", value.encode("utf-8"))])
    assert_problem(response, 400, "fencing-token-malformed")
    assert app.calls == []


async def test_require_and_resource_callables_decide_what_is_fenced_and_how() -> None:
    """`require` picks the requests that need a token and `resource` names their fence: one key
    for the whole API makes a newer write anywhere refuse an older one everywhere."""
    app = App()
    middleware = FencingMiddleware(
        app,
        store=MemoryFenceStore(),
        require=lambda scope: scope["path"].startswith("/payments"),
        resource=lambda scope: "payments",
    )
    async with client(middleware) as http:
        assert (await http.get("/health")).status_code == 200
        assert (await http.get("/payments")).status_code == 428
        first = await http.post("/payments/1", headers={"Fencing-Token": "job/5"})
        second = await http.post("/payments/2", headers={"Fencing-Token": "job/4"})
    assert first.status_code == 200
    assert_problem(second, 409, "stale-generation")
    assert app.calls[-1] == FencedRequest("payments", "job", 5)


async def test_non_http_scopes_pass_through_untouched() -> None:
    """Lifespan and websocket scopes reach the app as they are, without any check."""
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    middleware = FencingMiddleware(app, store=MemoryFenceStore())

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        raise AssertionError("nothing is sent for a pass-through scope")

    await middleware({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    await middleware({"type": "websocket", "path": "/ws", "headers": []}, receive, send)
    assert seen == ["lifespan", "websocket"]


class UnavailableStore(MemoryFenceStore):
    async def advance(self, resource: str, lease: str, generation: int) -> int:
        raise FenceStoreUnavailable("the database is down")


async def test_an_unreachable_store_refuses_with_503_instead_of_letting_the_write_through() -> None:
    """When the store cannot be asked the request is refused (503 with Retry-After): the fence
    fails closed."""
    app = App()
    response = await post(
        FencingMiddleware(app, store=UnavailableStore()), [("Fencing-Token", "x/1")]
    )
    assert_problem(response, 503, "fence-store-unavailable")
    assert response.headers["retry-after"] == "1"
    assert app.calls == []


async def test_a_fencing_error_raised_by_the_app_before_its_response_is_answered() -> None:
    """A refusal raised inside the app (the postgres dependency's own check) before the response
    starts is answered as a problem, not a 500; after it started, it propagates."""

    async def refusing(scope: Scope, receive: Receive, send: Send) -> None:
        raise StaleFencingToken("checked again in the transaction", highest=9)

    refused = FencingMiddleware(refusing, store=MemoryFenceStore())
    response = await post(refused, [("Fencing-Token", "x/1")])
    assert assert_problem(response, 409, "stale-generation")["highest"] == 9

    async def late(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise StaleFencingToken("too late", highest=9)

    with pytest.raises(StaleFencingToken):
        await raw_post(
            FencingMiddleware(late, store=MemoryFenceStore()), [(b"fencing-token", b"x/1")]
        )


async def test_the_resource_lock_is_held_until_the_response_is_sent() -> None:
    """In one process a second request for the resource waits until the first one's response is
    complete; then a lower generation is refused, never run after a higher one."""
    release, started = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        token = accepted_token()
        assert token is not None
        order.append(f"start {token.generation}")
        started.set()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        if token.generation == 8:
            await release.wait()
        await send({"type": "http.response.body", "body": b"b"})
        order.append(f"end {token.generation}")

    middleware = FencingMiddleware(app, store=MemoryFenceStore())
    async with client(middleware) as http:
        first = asyncio.create_task(http.post("/r", headers={"Fencing-Token": "job/8"}))
        await started.wait()
        second = asyncio.create_task(http.post("/r", headers={"Fencing-Token": "job/7"}))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not second.done()
        assert order == ["start 8"]
        release.set()
        responses = await asyncio.gather(first, second)
    assert [r.status_code for r in responses] == [200, 409]
    assert order == ["start 8", "end 8"]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"store": object()}, TypeError),
        ({"store": MemoryFenceStore(), "resource": "path"}, TypeError),
        ({"store": MemoryFenceStore(), "require": True}, TypeError),
        ({"store": MemoryFenceStore(), "missing_status": 200}, ValueError),
        ({"store": MemoryFenceStore(), "missing_status": "428"}, TypeError),
    ],
)
def test_bad_configuration_is_refused_with_an_exception(
    options: dict[str, Any], error: type[Exception]
) -> None:
    """Configuration is validated when the middleware is built, with exceptions."""
    with pytest.raises(error):
        FencingMiddleware(App(), **options)


async def raw_post(
    middleware: FencingMiddleware, headers: list[tuple[bytes, bytes]]
) -> httpx.Response:
    """Call the middleware with a hand-made scope (bytes httpx would not send as they are)."""
    sent: list[Message] = []
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/payments/42",
        "raw_path": b"/payments/42",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "server": ("test", 80),
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await middleware(scope, receive, send)
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return httpx.Response(
        start["status"],
        headers=[(k.decode(), v.decode()) for k, v in start["headers"]],
        content=body,
    )


@pytest.mark.slow  # a fresh interpreter
def test_the_fencing_modules_import_no_framework_or_driver() -> None:
    """The middleware, stores and hooks load neither asyncpg nor any web framework; only
    `tenure.pg` needs asyncpg."""
    probe = (
        "import sys, tenure._fencing, tenure._middleware, tenure._propagation\n"
        "loaded = {'asyncpg', 'starlette', 'fastapi', 'pydantic'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
        "import tenure.pg\n"
        "assert 'asyncpg' in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
