# Generated from tenure/_async/events.py by scripts/generate_sync.py: edit that one.
"""Following the service's event stream: connect, parse, and reconnect with the last event id
after a disconnect or a `stream.dropped`. What `AsyncTenure.events()` returns."""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from tenure._client import transport_error
from tenure._concurrency import sleep
from tenure._error_answers import error_from_response
from tenure._errors import TenureError
from tenure._events import (
    DEFAULT_RECONNECT_DELAY,
    DROPPED,
    STREAM_PATH,
    SSEParser,
    StreamEvent,
    check_media_type,
    connected,
    resume_headers,
    resume_point,
    stream_params,
)
from tenure._retry import RetryPolicy, retry_delay

__all__ = ["follow"]


def follow(
    http: httpx.Client,
    *,
    namespace: str | None,
    last_event_id: str | None,
    retry: RetryPolicy,
    timeouts: httpx.Timeout,
) -> Iterator[StreamEvent]:
    """The stream's events, for as long as the caller reads them, each connection's first
    preceded by a `stream.connected`. A connection that ends is opened again after the
    service's `retry:` delay; `retry` decides how many failed connections in a row are borne
    (a 4xx is raised at once). The read timeout of `timeouts` is the longest silence taken
    for a live connection."""
    resume, failures, delay = last_event_id, 0, DEFAULT_RECONNECT_DELAY
    while True:
        parser = SSEParser()
        try:
            with http.stream(
                "GET",
                STREAM_PATH,
                params=stream_params(namespace),
                headers=resume_headers(resume),
                timeout=timeouts,
            ) as response:
                if response.status_code != 200:
                    content = response.read()
                    raise error_from_response(response.status_code, response.headers, content)
                check_media_type(response.headers.get("content-type", ""))
                failures = 0
                yield connected(resume)
                for line in response.iter_lines():
                    message = parser.feed(line)
                    if message is None:
                        continue
                    event = StreamEvent.of(message)
                    resume = resume_point(event, resume)
                    yield event
                    if event.type == DROPPED:
                        break
        except httpx.TransportError as failure:
            error: TenureError = transport_error(failure)
        except TenureError as failure:
            error = failure
        else:  # the service ended the stream, or dropped this consumer
            delay = delay if parser.retry is None else parser.retry / 1000
            sleep(delay)
            continue
        failures += 1
        pause = retry_delay(retry, failures, error)
        if pause is None:
            raise error
        sleep(pause)
