"""`AsyncTenure.events()` against the real service over HTTP: it sees lease and window events
(namespace filtered), resumes after the last event id it was given, and reconnects by itself
when the service goes away and comes back, or drops it for falling behind; `Tenure.events()`
sees them too."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator

import pytest

from tenure import AsyncTenure, StreamEvent, Tenure
from tenure._events import CONNECTED, DROPPED, RESET
from tenure_server.adapters.stream import EventHub
from tenure_server.domain.events import LeaseEvent
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.integration.test_monitor import eventually
from tests.support.event_streams import served_with_adapters
from tests.support.processes import free_port, running, tenure_command, without_tenure_settings

# Longest wait for an event the test caused.
EVENT_TIMEOUT = 10.0


async def until(
    stream: AsyncIterator[StreamEvent], kind: str, within: float = EVENT_TIMEOUT
) -> list[StreamEvent]:
    """The events read up to and including the first of type `kind`."""
    seen: list[StreamEvent] = []
    async with asyncio.timeout(within):
        while True:
            seen.append(await anext(stream))
            if seen[-1].type == kind:
                return seen


async def test_events_of_a_namespace(service_url: str) -> None:
    """A stream opens with the client's stream.connected, then carries the namespace's lease
    grant, window claim and completion and release, with their fields, and nothing else."""
    async with (
        AsyncTenure(service_url, holder="watcher") as watcher,
        AsyncTenure(service_url, holder="worker-1") as worker,
    ):
        stream = watcher.events(namespace="billing.")
        opened = await anext(stream)
        assert (opened.type, opened.id, opened.data["resumed_from"]) == (CONNECTED, None, None)
        await worker.acquire("reports.daily", ttl=30)  # another namespace
        lease = await worker.acquire("billing.close", ttl=30)
        [granted] = await until(stream, "lease.acquired")
        assert (granted.name, granted.holder, granted.generation) == (
            "billing.close",
            "worker-1",
            1,
        )
        assert granted.id
        assert granted.at is not None

        await worker.claim_window("billing.close", "2026-12-04", lease)
        await worker.complete_window("billing.close", "2026-12-04", lease)
        await worker.release(lease)
        seen = await until(stream, "lease.released")
        assert [event.type for event in seen] == [
            "window.claimed",
            "window.completed",
            "lease.released",
        ]
        assert {(event.name, event.window) for event in seen[:2]} == {
            ("billing.close", "2026-12-04")
        }
        assert len({event.id for event in [granted, *seen]}) == 4
        await stream.aclose()  # type: ignore[attr-defined]  # an async generator


def test_sync_client_follows_the_stream(service_url: str) -> None:
    """`Tenure.events()` opens with stream.connected and carries the namespace's lease grant (its
    stream goes through httpx's own pool: reqwest's one deadline per request would end it)."""
    with (
        Tenure(service_url, holder="watcher") as watcher,
        Tenure(service_url, holder="worker-1") as worker,
    ):
        stream = watcher.events(namespace="billing.", idle_timeout=EVENT_TIMEOUT)
        assert next(stream).type == CONNECTED
        worker.acquire("billing.close", ttl=30)
        granted = next(stream)
        assert (granted.type, granted.name, granted.holder) == (
            "lease.acquired",
            "billing.close",
            "worker-1",
        )
        stream.close()  # type: ignore[attr-defined]  # a generator


async def test_resumes_after_the_last_event_id(service_url: str) -> None:
    """A stream opened with the id of the last event seen gets what happened since, in order."""
    async with (
        AsyncTenure(service_url, holder="watcher") as watcher,
        AsyncTenure(service_url, holder="worker-a") as a,
        AsyncTenure(service_url, holder="worker-b") as b,
    ):
        stream = watcher.events()
        await anext(stream)
        lease = await a.acquire("nightly", ttl=30)
        [*_, seen] = await until(stream, "lease.acquired")
        await stream.aclose()  # type: ignore[attr-defined]  # an async generator

        await a.release(lease)  # while no stream is open
        await b.acquire("nightly", ttl=30)
        resumed = watcher.events(last_event_id=seen.id)
        opened = await anext(resumed)
        assert (opened.type, opened.data["resumed_from"]) == (CONNECTED, seen.id)
        missed = await until(resumed, "lease.acquired")
        assert [(event.type, event.holder) for event in missed] == [
            ("lease.released", "worker-a"),
            ("lease.acquired", "worker-b"),
        ]
        await resumed.aclose()  # type: ignore[attr-defined]  # an async generator


@pytest.mark.slow
async def test_reconnects_when_the_service_comes_back(database_url: str) -> None:
    """The service stops while a stream is open and starts again on the same port: the iterator
    reconnects (stream.connected, resuming from the last id) and goes on with new events."""
    port = free_port()
    command = tenure_command(port)
    env = without_tenure_settings() | {
        "TENURE_DATABASE_URL": database_url,
        "TENURE_LOG_LEVEL": "warning",
    }
    url = f"http://127.0.0.1:{port}"
    async with AsyncTenure(url, holder="watcher") as watcher, AsyncTenure(url, holder="w") as w:
        with running(command, port, env=env, output=subprocess.DEVNULL):
            stream = watcher.events()
            await anext(stream)
            await w.acquire("first", ttl=30)
            [*_, before] = await until(stream, "lease.acquired")
            pending = asyncio.ensure_future(until(stream, CONNECTED))
        # Stopped: the iterator retries until the service listens again.
        with running(command, port, env=env, output=subprocess.DEVNULL):
            reopened = await pending
            assert reopened[-1].data["resumed_from"] == before.id
            await w.acquire("second", ttl=30)
            after = await until(stream, "lease.acquired")
            assert after[-1].name == "second"
            assert {event.type for event in after} <= {"stream.reset", "lease.acquired"}
            await stream.aclose()  # type: ignore[attr-defined]  # an async generator


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_dropped_stream_reconnects_from_the_id_it_names(database_url: str) -> None:
    """A reader that stops reading while thousands of events arrive is dropped by the service;
    the iterator yields stream.dropped (naming the last event it was sent), reconnects from that
    id and goes on with new events."""
    settings = Settings(
        database_url=database_url, events_subscriber_queue=4, events_buffer_size=100_000
    )
    app = create_app(settings)
    async with served_with_adapters(app) as (http, adapters):
        hub = adapters.events
        url = str(http.base_url).rstrip("/")
        async with AsyncTenure(url, holder="watcher") as watcher, AsyncTenure(url) as worker:
            stream = watcher.events()
            await anext(stream)
            # Far more than the socket buffers hold (about 20 MB), while nothing is read.
            for index in range(20_000):
                hub.record(LeaseEvent("acquired", f"flood-{index:05}-" + "x" * 1000, "h", index))
            await eventually(lambda: hub.dropped_streams == 1, within=60)
            seen = await until(stream, DROPPED, within=60)
            # The last event sent before the drop; if its queue filled at once, where it began
            # (on a replica that had no event yet, an id never sent: it resumes with a reset).
            last_sent = seen[-2].id if len(seen) > 1 else f"{hub.publisher}-0"
            assert seen[-1].data["last_event_id"] == last_sent
            reopened = await anext(stream)
            assert (reopened.type, reopened.data["resumed_from"]) == (CONNECTED, last_sent)
            await worker.acquire("after-the-drop", ttl=30)
            # The flood's tail comes first (and may get this reader dropped again: the iterator
            # goes on all the same).
            after: list[StreamEvent] = []
            async with asyncio.timeout(90):
                while not after or after[-1].name != "after-the-drop":
                    after.append(await anext(stream))
            assert {event.type for event in after} <= {
                RESET,
                DROPPED,
                CONNECTED,
                "lease.acquired",
            }
            await stream.aclose()  # type: ignore[attr-defined]  # an async generator


async def test_a_stream_dropped_before_its_first_event_misses_nothing_silently(
    database_url: str,
) -> None:
    """A burst larger than the queue drops a stream before it was sent any event. On a replica
    that had no event yet, the iterator reconnects from the id stream.dropped names and the new
    stream begins with stream.reset; once the replica has a history, the reconnected stream
    replays the whole burst."""
    settings = Settings(database_url=database_url, events_subscriber_queue=5)
    app = create_app(settings)
    async with served_with_adapters(app) as (http, adapters):
        hub = adapters.events
        url = str(http.base_url).rstrip("/")
        async with AsyncTenure(url, holder="watcher") as watcher:
            async with asyncio.timeout(EVENT_TIMEOUT):
                after_the_drop = await burst_while_connecting(watcher, hub, "first", 1)
            assert [event.type for event in after_the_drop] == [RESET]
            async with asyncio.timeout(EVENT_TIMEOUT):
                after_the_drop = await burst_while_connecting(watcher, hub, "second", 20)
            assert [event.name for event in after_the_drop] == [
                f"second-{index:02}" for index in range(20)
            ]


async def burst_while_connecting(
    watcher: AsyncTenure, hub: EventHub, burst: str, count: int
) -> list[StreamEvent]:
    """Open a stream, record 20 events at once (one notification: the queue overflows before
    the stream is sent any), and return the first `count` events after the reconnection."""
    stream = watcher.events()
    assert (await anext(stream)).type == CONNECTED
    for index in range(20):
        hub.record(LeaseEvent("acquired", f"{burst}-{index:02}", "h", 1))
    dropped = await anext(stream)
    assert dropped.type == DROPPED
    resume = dropped.data["last_event_id"]
    assert resume
    reopened = await anext(stream)
    assert (reopened.type, reopened.data["resumed_from"]) == (CONNECTED, resume)
    following = [await anext(stream) for _ in range(count)]
    await stream.aclose()  # type: ignore[attr-defined]  # an async generator
    return following
