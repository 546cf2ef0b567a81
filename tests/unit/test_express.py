"""The express lane hands FastAPI every request it does not answer itself, body intact."""

from __future__ import annotations

from dataclasses import replace

import pytest
from starlette.types import Message, Receive, Scope, Send

from tenure_server.api.express import Express
from tenure_server.api.hot_routes import HOT_ROUTES

GOOD = b'{"holder": "a", "ttl_seconds": 30}'


def post(path: str, content_type: bytes | None = b"application/json") -> Scope:
    headers = [] if content_type is None else [(b"content-type", content_type)]
    return {"type": "http", "method": "POST", "path": path, "headers": headers, "root_path": ""}


class Downstream:
    """Stands for FastAPI: records the scope and every message it reads, then answers 204."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.received: list[Message] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)
        while True:
            message = await receive()
            self.received.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def hand_over(scope: Scope, messages: list[Message]) -> Downstream:
    downstream = Downstream()
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(_: Message) -> None:
        pass

    await Express(downstream, HOT_ROUTES)(scope, receive, send)
    return downstream


def body(*chunks: bytes) -> list[Message]:
    return [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]


@pytest.mark.parametrize(
    "scope",
    [
        post("/v1/leases/-not-a-name/acquire"),
        post("/v1/leases/" + "n" * 201 + "/acquire"),
        post("/v1/leases/a/b/acquire"),
        post("/v1/leases/a/steal"),
        post("/v1/fences/a/acquire"),
        post("/v1/leases/renew/extra"),
        post("/v1/leases/a/acquire", b"text/plain"),
        post("/v1/leases/a/acquire", b"application/json; charset=utf-8"),
        {**post("/v1/leases/a/acquire"), "method": "PUT"},
        {**post("/v1/leases/a/acquire"), "root_path": "/tenure"},
        post("/v1/jobs/-not-a-name/windows/2026-09-25/claim"),
        post("/v1/jobs/close-day/windows/a%20b/claim"),
        post("/v1/jobs/close-day/windows/" + "1" * 101 + "/complete"),
        post("/v1/jobs/close-day/windows/2026-09-25/resume"),
        post("/v1/jobs/close-day/windows/2026-09-25/x/claim"),
        post("/v1/jobs/close-day/windows/./claim"),
        post("/v1/jobs/close-day/windows/../complete"),
    ],
    ids=[
        "bad-name",
        "long-name",
        "extra-segment",
        "unknown-verb",
        "verb-of-another-collection",
        "batch-path-extended",
        "not-json",
        "json-with-parameters",
        "other-method",
        "mounted-under-a-root-path",
        "bad-job-name",
        "bad-window-key",
        "long-window-key",
        "unknown-window-verb",
        "window-path-extended",
        "dot-window-key",
        "dot-dot-window-key",
    ],
)
async def test_requests_outside_the_lane_go_to_fastapi_unread(scope: Scope) -> None:
    downstream = await hand_over(scope, body(GOOD))
    assert downstream.scopes == [scope]
    assert downstream.received == body(GOOD)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"ttl_seconds": 30}',
        b'{"holder": "", "ttl_seconds": 30}',
        b'{"holder": "a", "ttl_seconds": "soon"}',
    ],
    ids=[
        "empty",
        "malformed",
        "not-an-object",
        "missing-field",
        "refused-by-validator",
        "bad-type",
    ],
)
async def test_a_body_the_route_would_refuse_is_replayed_to_fastapi(payload: bytes) -> None:
    downstream = await hand_over(post("/v1/leases/a/acquire"), body(payload))
    assert downstream.received == body(payload)


async def test_a_batch_the_route_would_refuse_is_replayed_to_fastapi() -> None:
    payload = b'{"holder": "a", "ttl_seconds": 30, "leases": []}'
    downstream = await hand_over(post("/v1/leases/renew"), body(payload))
    assert downstream.received == body(payload)


async def test_a_body_in_several_chunks_is_replayed_chunk_by_chunk() -> None:
    chunks = body(b'{"holder": ', b'""}')
    downstream = await hand_over(post("/v1/leases/a/renew"), chunks)
    assert downstream.received == chunks


async def test_a_client_gone_before_its_body_arrived_is_left_to_fastapi() -> None:
    messages: list[Message] = [
        {"type": "http.request", "body": b'{"holder"', "more_body": True},
        {"type": "http.disconnect"},
    ]
    downstream = await hand_over(post("/v1/leases/a/release"), messages)
    assert downstream.received == messages


def test_a_route_the_lane_cannot_index_is_refused_at_start() -> None:
    """The lane finds a templated route by its fixed last segment; one without is refused."""
    route = replace(HOT_ROUTES[0], path="/v1/leases/{name}")
    with pytest.raises(ValueError, match="fixed last segment"):
        Express(Downstream(), [route])
