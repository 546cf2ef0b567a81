"""The edge middleware against a tiny ASGI app: body limit and request records."""

from __future__ import annotations

import json
import logging

import pytest
from starlette.types import Message, Receive, Scope, Send

from tenure_server.adapters.telemetry import Metrics
from tenure_server.api.edge import RequestEdge


def http_scope(path: str = "/v1/x", headers: list[tuple[bytes, bytes]] | None = None) -> Scope:
    return {"type": "http", "method": "POST", "path": path, "headers": headers or []}


async def exchange(
    edge: RequestEdge, scope: Scope, chunks: list[bytes]
) -> tuple[int, dict[str, object]]:
    """Runs one request; the status and the JSON body the client saw."""
    messages: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await edge(scope, receive, send)
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return int(sent[0]["status"]), json.loads(body)


async def reads_body(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the whole body, answers 400 if reading fails (as FastAPI does), else 200."""
    status = 200
    try:
        while (await receive()).get("more_body", False):
            pass
    except Exception:
        status = 400
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def count(metrics: Metrics, status: str) -> float:
    labels = {"method": "POST", "route": "unmatched", "status": status}
    value = metrics.registry.get_sample_value("tenure_http_request_duration_seconds_count", labels)
    return value or 0.0


def test_a_limit_below_one_byte_is_refused() -> None:
    """Configuration errors surface at construction, as exceptions."""
    with pytest.raises(ValueError, match="max_bytes"):
        RequestEdge(reads_body, Metrics(), max_bytes=0)


@pytest.mark.parametrize("declared", [b"11", b"ten"])
async def test_a_declared_length_over_the_limit_or_malformed_is_413(declared: bytes) -> None:
    """The app never runs; the refusal is a problem and is recorded as a 413."""
    metrics = Metrics()
    edge = RequestEdge(reads_body, metrics, max_bytes=10)
    status, body = await exchange(edge, http_scope(headers=[(b"content-length", declared)]), [])
    assert (status, body["type"]) == (413, "/problems/payload-too-large")
    assert count(metrics, "413") == 1


async def test_a_streamed_body_over_the_limit_replaces_the_apps_answer() -> None:
    """The app's own error for the failed read is not sent; the 413 problem is."""
    metrics = Metrics()
    edge = RequestEdge(reads_body, metrics, max_bytes=10)
    status, body = await exchange(edge, http_scope(), [b"123456", b"789012"])
    assert (status, body["status"]) == (413, 413)
    assert (count(metrics, "413"), count(metrics, "400")) == (1, 0)


async def test_a_body_within_the_limit_reaches_the_app(caplog: pytest.LogCaptureFixture) -> None:
    """A routine success is counted and logged at debug only."""
    caplog.set_level(logging.INFO, logger="tenure.http")
    metrics = Metrics()
    edge = RequestEdge(reads_body, metrics, max_bytes=10)
    assert await exchange(edge, http_scope(), [b"12345", b"67890"]) == (200, {})
    assert count(metrics, "200") == 1
    assert caplog.records == []


async def test_other_scopes_pass_through() -> None:
    """Lifespan messages are none of the edge's business."""
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def never() -> Message:
        raise AssertionError

    async def ignore(message: Message) -> None:
        raise AssertionError

    await RequestEdge(app, Metrics(), max_bytes=1)({"type": "lifespan"}, never, ignore)
    assert seen == ["lifespan"]
