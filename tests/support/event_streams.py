"""What the event stream tests share: the app served by a real uvicorn in this process (httpx's
ASGITransport buffers a streamed body, so a stream must cross a socket), and a reader of
Server-Sent Events that checks each event against the schema openapi/openapi.json documents for
one (the contract test cannot: schemathesis waits for a response to end, and a stream does not)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from tenure_server.server.app import Adapters
from tenure_server.server.transport import RoundHttpToolsProtocol
from tests.support.lifespan import adapters_in
from tests.support.processes import free_port

STREAM = "/v1/events/stream"
WITHIN_SECONDS = 10.0
OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
EVENT_SCHEMA: dict[str, Any] = json.loads(OPENAPI.read_text())["paths"][STREAM]["get"]["responses"][
    "200"
]["content"]["text/event-stream"]["schema"]


def check_documented(fields: dict[str, str]) -> None:
    """One event's fields are those the document gives, its type one it lists, its data JSON."""
    properties = EVENT_SCHEMA["properties"]
    assert set(EVENT_SCHEMA["required"]) <= set(fields) <= set(properties), fields
    assert fields["event"] in properties["event"]["enum"], fields
    assert json.loads(fields["data"])["type"] == fields["event"], fields


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """The app (lifespan included) behind uvicorn on a loopback port, as `tenure serve` runs it,
    and a client of it."""
    async with served_with_adapters(app) as (client, _):
        yield client


@asynccontextmanager
async def served_with_adapters(app: FastAPI) -> AsyncIterator[tuple[httpx.AsyncClient, Adapters]]:
    """As `served`, with the adapters the app's lifespan registered (its event hub, its
    monitor)."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=RoundHttpToolsProtocol,
        log_config=None,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before starting")
        await asyncio.sleep(0.02)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client, adapters_in(server.lifespan.state)
    finally:
        # As SIGTERM does (server/app.py): end the streams, or uvicorn waits for them.
        if server.started:
            adapters_in(server.lifespan.state).events.close()
        server.should_exit = True
        await task


@dataclass
class Received:
    event: str
    data: dict[str, Any]
    id: str | None


@dataclass
class EventReader:
    """Reads the events of one open stream (comments are kept apart)."""

    lines: AsyncIterator[str]
    comments: list[str] = field(default_factory=list)
    retry: str | None = None

    async def next(self, within: float = WITHIN_SECONDS) -> Received | None:
        """The next event, or None when the stream ends."""
        async with asyncio.timeout(within):
            fields: dict[str, str] = {}
            async for line in self.lines:
                if line == "":
                    if "event" in fields:
                        check_documented(fields)
                        data = json.loads(fields["data"])
                        return Received(fields["event"], data, fields.get("id"))
                    continue
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                name, _, value = line.partition(": ")
                if name == "retry":
                    self.retry = value
                else:
                    fields[name] = value
            return None

    async def until(self, kind: str, within: float = WITHIN_SECONDS) -> Received:
        """Skip events until one of this type."""
        while True:
            received = await self.next(within)
            assert received is not None, f"the stream ended before {kind}"
            if received.event == kind:
                return received

    async def events(self, count: int, within: float = WITHIN_SECONDS) -> list[Received]:
        found: list[Received] = []
        for _ in range(count):
            received = await self.next(within)
            assert received is not None, f"the stream ended after {found}"
            found.append(received)
        return found


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient, *, headers: dict[str, str] | None = None, **params: str
) -> AsyncIterator[EventReader]:
    """An open stream, once the server said `: connected` (so its subscription exists)."""
    async with client.stream("GET", STREAM, params=params, headers=headers) as response:
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = EventReader(response.aiter_lines())
        async with asyncio.timeout(WITHIN_SECONDS):
            while "connected" not in reader.comments:
                line = await anext(reader.lines)
                if line.startswith(":"):
                    reader.comments.append(line[1:].strip())
                elif line.startswith("retry: "):
                    reader.retry = line.removeprefix("retry: ")
        yield reader
