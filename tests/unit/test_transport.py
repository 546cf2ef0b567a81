"""`tenure serve`'s HTTP protocol sends what one round of the event loop wrote in one send, in
order, and never holds bytes past a close or beyond its limit."""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send
from uvicorn.protocols import utils
from uvicorn.protocols.http import flow_control, httptools_impl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tenure_server.server.transport import FLUSH_BYTES, RoundHttpToolsProtocol, _RoundTransport


class Recorder(asyncio.Transport):
    """Stands for the socket's transport: records each write it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: Any) -> None:
        assert not self.closed
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0


def test_uvicorn_s_protocol_uses_only_what_the_round_transport_defines() -> None:
    """The subclass replaces the transport `connection_made` receives, which uvicorn keeps as
    `self.transport`; every transport method uvicorn's httptools protocol, its flow control and
    its address helpers call must be one `_RoundTransport` defines itself (the base class's raise
    NotImplementedError). pyproject.toml pins the uvicorn minor this holds for."""
    made = inspect.signature(HttpToolsProtocol.connection_made)
    assert list(made.parameters) == ["self", "transport"]
    assert "self.transport = transport" in inspect.getsource(HttpToolsProtocol.connection_made)
    sources = "".join(inspect.getsource(m) for m in (httptools_impl, flow_control, utils))
    called = set(re.findall(r"transport\.(\w+)\(", sources))
    assert {"write", "close", "is_closing", "pause_reading", "get_extra_info"} <= called
    assert called <= set(vars(_RoundTransport))


async def next_round() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_writes_of_one_round_leave_as_one_send_in_order() -> None:
    socket_side = Recorder()
    transport = _RoundTransport(socket_side, asyncio.get_running_loop())
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.writelines([b"{", b"}"])
    assert socket_side.writes == []
    assert transport.get_write_buffer_size() == 21
    await next_round()
    assert socket_side.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
    transport.write(b"next")
    await next_round()
    assert socket_side.writes[1:] == [b"next"]


async def test_close_sends_what_is_held_first() -> None:
    socket_side = Recorder()
    transport = _RoundTransport(socket_side, asyncio.get_running_loop())
    transport.write(b"last answer")
    transport.close()
    assert socket_side.writes == [b"last answer"]
    assert transport.is_closing()
    await next_round()
    assert socket_side.writes == [b"last answer"]


async def test_abort_drops_what_is_held() -> None:
    socket_side = Recorder()
    transport = _RoundTransport(socket_side, asyncio.get_running_loop())
    transport.write(b"never sent")
    transport.abort()
    await next_round()
    assert socket_side.writes == []
    assert socket_side.aborted


async def test_a_large_body_leaves_at_once_so_flow_control_sees_it() -> None:
    socket_side = Recorder()
    transport = _RoundTransport(socket_side, asyncio.get_running_loop())
    transport.write(b"h")
    transport.write(b"x" * FLUSH_BYTES)
    assert socket_side.writes == [b"h" + b"x" * FLUSH_BYTES]
    assert transport.get_write_buffer_size() == 0


async def streaming_app(scope: Scope, receive: Receive, send: Send) -> None:
    """A plain answer, or (on /stream) a body far over FLUSH_BYTES in chunks, without yielding."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/stream":

        async def chunks() -> Any:
            for index in range(64):
                yield bytes([65 + index % 26]) * 4096

        await StreamingResponse(chunks())(scope, receive, send)
        return
    body = scope["path"].encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def served() -> Any:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        streaming_app, http=RoundHttpToolsProtocol, lifespan="off", log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:  # noqa: ASYNC110 (uvicorn's server has only this flag)
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    server.should_exit = True
    await task
    listener.close()


async def test_keep_alive_answers_stay_whole_and_in_order(served: str) -> None:
    async with httpx.AsyncClient(base_url=served) as client:
        for index in range(50):
            response = await client.get(f"/answer-{index}")
            assert (response.status_code, response.text) == (200, f"/answer-{index}")
        head = await client.head("/answer")
        assert head.status_code == 200
        assert head.content == b""
        stream = await client.get("/stream")
        expected = b"".join(bytes([65 + index % 26]) * 4096 for index in range(64))
        assert stream.content == expected
