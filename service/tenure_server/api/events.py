"""/v1/events/stream: what happens to leases, windows, fences and alerts, live, as Server-Sent
Events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from tenure_server.api.dependencies import CallerDep, EventsDep
from tenure_server.api.schemas import problem_responses
from tenure_server.app.ports import EventStream, StreamSubscription
from tenure_server.app.stream_wire import (
    CONTROL_TYPES,
    EVENT_TYPES,
    RETRY_MILLISECONDS,
    dropped_frame,
)
from tenure_server.domain.errors import Forbidden
from tenure_server.domain.names import NAME_MAX_LENGTH

router = APIRouter(prefix="/v1/events", tags=["events"])

MEDIA_TYPE = "text/event-stream"
# A consumer dropped for not reading is sent its `stream.dropped` for this long, then the
# connection is closed: its socket buffers are full, and waiting longer would hold the stream.
FAREWELL_SECONDS = 1.0

# One event of the stream, as OpenAPI 3.1 describes a text/event-stream's `schema`: its fields.
EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": [*EVENT_TYPES, *CONTROL_TYPES]},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": "One line of JSON with `type` (= `event`) and `at`.",
        },
        "id": {"type": "string", "description": "Absent on stream.reset and stream.dropped."},
        "retry": {"type": "integer", "minimum": 0},
    },
    "required": ["event", "data"],
}

_DESCRIPTION = f"""Server-Sent Events (`text/event-stream`). On connect: `retry:` and a
`: connected` comment; a `: keepalive` comment every `TENURE_EVENTS_KEEPALIVE_SECONDS`. Each
event has an `id:` (the same on every replica), an `event:` line (its type) and one line of JSON
`data` with `type` and `at` (ISO 8601 UTC). Types:
{", ".join(f"`{kind}`" for kind in EVENT_TYPES)}; their fields are listed in docs/monitoring.md
("Event stream").

Control events, without `id:`: `stream.reset` (reason `history-gap`: events may have been
missed; reload the full state, e.g. /v1/overview, and go on) and `stream.dropped` (reason
`slow-consumer`, with `last_event_id`: the stream fell too far behind and ends; reconnect with
`Last-Event-ID` set to it, which is always given: a stream dropped before its first event names
where it began). Resume with the `Last-Event-ID` header, or `last_event_id` (the header wins).
Each principal may hold `TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL` streams per process (not
applied with authentication off), and a process `TENURE_EVENTS_MAX_STREAMS`."""


class EventStreamResponse(StreamingResponse):
    """A stream that gives up FAREWELL_SECONDS after its consumer was dropped, even in the
    middle of a send that waits for the consumer to read."""

    media_type = MEDIA_TYPE

    def __init__(self, content: AsyncGenerator[bytes], subscription: StreamSubscription) -> None:
        # No caching by proxies, and no buffering by nginx-like ones.
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        super().__init__(content, headers=headers)
        self._content = content
        self._subscription = subscription

    async def stream_response(self, send: Send) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(None) as deadline:
                self._subscription.when_dropped = lambda: deadline.reschedule(
                    loop.time() + FAREWELL_SECONDS
                )
                start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
                await send(start)
                async for chunk in self._content:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except TimeoutError:
            return  # the server closes the connection of a response left incomplete
        finally:
            # Cancelled in a send (the client went away), the frames' generator still holds the
            # subscription: close it now rather than when it is collected.
            self._subscription.when_dropped = None
            await self._content.aclose()


async def _frames(
    hub: EventStream[Any], subscription: StreamSubscription, keepalive: float
) -> AsyncGenerator[bytes]:
    try:
        yield f"retry: {RETRY_MILLISECONDS}\n: connected\n\n".encode()
        while True:
            chunk = await subscription.take(keepalive)
            if subscription.ending == "slow-consumer":
                yield dropped_frame(subscription.last_event_id)
                return
            if subscription.ending is not None:
                return
            yield chunk or b": keepalive\n\n"
    finally:
        hub.unsubscribe(subscription)


@router.get(
    "/stream",
    response_class=StreamingResponse,
    description=_DESCRIPTION,
    responses={
        **problem_responses(401, 403),
        200: {
            "content": {MEDIA_TYPE: {"schema": EVENT_SCHEMA}},
            "description": "The event stream, until the client disconnects or is dropped.",
        },
        503: {
            **problem_responses()[503],
            "description": "Too many streams on this process, or of this principal on it "
            "(Retry-After), or shutting down.",
        },
    },
)
async def stream(
    hub: EventsDep,
    caller: CallerDep,
    namespace: Annotated[
        str,
        Query(
            max_length=NAME_MAX_LENGTH,
            pattern=r"^[A-Za-z0-9._:-]*$",
            description="Only events whose names (lease, job, alert subject; a fence "
            "rejection's resource and lease) all start with this.",
        ),
    ] = "",
    last_event_id: Annotated[
        str | None, Query(max_length=100, description="Resume after this event id.")
    ] = None,
    last_event_id_header: Annotated[
        str | None,
        Header(alias="Last-Event-ID", max_length=100, description="Resume after this event id."),
    ] = None,
) -> Response:
    """Leases acquired, taken over, released, lost and force-released, windows claimed and
    completed, fence rejections, alerts opened and resolved: live, limited to the caller's
    namespaces (a fence rejection needs both its resource and its lease in them)."""
    caller.require("reader", "stream events")
    if namespace and not caller.owns(namespace):
        raise Forbidden(caller.label, "stream events", namespace)

    def visible(name: str) -> bool:
        return name.startswith(namespace) and caller.owns(name)

    # The header wins; an empty id (never sent by EventSource) means none.
    resume = last_event_id_header or last_event_id or None
    subscription = hub.subscribe(visible, resume, caller.name)
    return EventStreamResponse(
        _frames(hub, subscription, hub.config.keepalive_seconds), subscription
    )
