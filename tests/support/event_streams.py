"""What the event stream tests share (the app is served by `tests.support.live_service.served`:
httpx's ASGITransport buffers a streamed body, so a stream must cross a socket): a reader of
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
