"""The event stream's hub without a database: what one replica publishes is handed to another
replica's `deliver` as the channel would, so batching, ids, history, filters and the drop
policy are checked on their own."""

from __future__ import annotations

import json

import pytest

from tenure_server.adapters.stream import (
    MAX_PAYLOAD_BYTES,
    EventHub,
    StreamConfig,
    Subscription,
)
from tenure_server.app.stream_wire import EVENT_TYPES, streamed
from tenure_server.domain.errors import ShuttingDown, TooManyStreams
from tenure_server.domain.events import AlertEvent, Event, FenceEvent, LeaseEvent, WindowEvent


def acquired(name: str, generation: int = 1) -> LeaseEvent:
    return LeaseEvent("acquired", name, "holder", generation)


def everything(_: str) -> bool:
    return True


def carry(source: EventHub, target: EventHub) -> int:
    """Hand the source's batches to the target as the channel does; the number of batches."""
    batches = list(source.take_batches())
    for payload, _ in batches:
        target.deliver(payload)
    return len(batches)


async def frames(subscription: Subscription) -> list[str]:
    chunk = await subscription.take(0)
    return [part for part in chunk.decode().split("\n\n") if part]


async def test_batches_stay_under_the_notification_limit_and_keep_the_order() -> None:
    """Many events leave as several payloads under MAX_PAYLOAD_BYTES; ids are the publisher's
    and increase; the receiving side sees every event once, in order."""
    source, target = EventHub(StreamConfig()), EventHub(StreamConfig(subscriber_queue=10_000))
    subscription = target.subscribe(everything, None)
    for index in range(500):
        source.record(acquired(f"lease-{index:03}-" + "x" * 150))
    batches = list(source.take_batches())
    assert len(batches) > 10
    assert all(len(payload) <= MAX_PAYLOAD_BYTES for payload, _ in batches)
    assert sum(count for _, count in batches) == 500
    for payload, _ in batches:
        target.deliver(payload)
    received = await frames(subscription)
    ids = [frame.split("\n")[0].removeprefix("id: ") for frame in received]
    assert ids == [f"{source.publisher}-{n}" for n in range(1, 501)]
    names = [json.loads(frame.split("data: ")[1])["lease"] for frame in received]
    assert names == [f"lease-{index:03}-" + "x" * 150 for index in range(500)]


def test_only_the_streamed_events_are_buffered() -> None:
    """Refused acquires (skipped runs), fence acceptances and successful renewals are not on
    the stream; fence rejections are."""
    hub = EventHub(StreamConfig())
    hub.record(LeaseEvent("refused", "a", "h", None))
    hub.record(FenceEvent("resource", "a", 1))
    assert list(hub.take_batches()) == []
    hub.record(WindowEvent("claimed", "job", "w", "job", "h", 1, 1))
    hub.record(FenceEvent("resource", "a", 1, "stale_generation", 2))
    hub.record(AlertEvent("opened", "missed", "job", "w", "missed"))
    ((payload, count),) = hub.take_batches()
    assert count == 3
    assert [line.split("\t")[3] for line in payload.split("\n")] == [
        "window.claimed",
        "fence.rejected",
        "alert.opened",
    ]


async def test_an_overflowing_buffer_drops_the_oldest_and_resets_every_replica() -> None:
    """Past buffer_size the oldest events go, are counted, and the next batch starts with a
    reset marker: the receiving replicas tell their streams and forget their history."""
    source = EventHub(StreamConfig(buffer_size=3))
    target = EventHub(StreamConfig())
    source.record(acquired("before"))
    carry(source, target)
    subscription = target.subscribe(everything, None)
    for index in range(5):
        source.record(acquired(f"flood-{index}"))
    assert source.dropped_events == 2
    carry(source, target)
    received = await frames(subscription)
    assert received[0].startswith("event: stream.reset\n")
    assert [json.loads(frame.split("data: ")[1]).get("lease") for frame in received[1:]] == [
        "flood-2",
        "flood-3",
        "flood-4",
    ]
    resumed = target.subscribe(everything, f"{source.publisher}-1")
    assert (await frames(resumed))[0].startswith("event: stream.reset\n")


async def test_resuming_replays_what_followed_the_given_event_for_this_subscriber() -> None:
    """Last-Event-ID found: the later events the subscriber may see; not found: a reset."""
    source, target = EventHub(StreamConfig()), EventHub(StreamConfig())
    for name in ("billing.a", "ops.b", "billing.c", "billing.d"):
        source.record(acquired(name))
    carry(source, target)
    resumed = target.subscribe(lambda name: name.startswith("billing."), f"{source.publisher}-1")
    replayed = await frames(resumed)
    assert [frame.split("\n")[0] for frame in replayed] == [
        f"id: {source.publisher}-3",
        f"id: {source.publisher}-4",
    ]
    unknown = target.subscribe(everything, "elsewhere-7")
    (reset,) = await frames(unknown)
    assert json.loads(reset.split("data: ")[1])["reason"] == "history-gap"


async def test_a_fence_rejection_is_seen_only_by_readers_of_its_resource_and_lease() -> None:
    """A fence rejection names two names: another replica hands it, live and when resuming,
    only to a stream that may see both the resource and the lease (as verify requires both)."""
    source, target = EventHub(StreamConfig()), EventHub(StreamConfig())
    both = target.subscribe(lambda name: name.startswith("billing."), None)
    resource_only = target.subscribe(lambda name: name == "billing.ledger", None)
    lease_only = target.subscribe(lambda name: name == "billing.close", None)
    source.record(acquired("billing.close"))
    source.record(FenceEvent("billing.ledger", "billing.close", 1, "stale_generation", 2))
    source.record(FenceEvent("ops.ledger", "billing.close", 1, "lease_mismatch"))
    carry(source, target)
    (rejected,) = [frame for frame in await frames(both) if "fence.rejected" in frame]
    assert json.loads(rejected.split("data: ")[1]) | {"at": None} == {
        "type": "fence.rejected",
        "at": None,
        "resource": "billing.ledger",
        "lease": "billing.close",
        "generation": 1,
        "reason": "stale_generation",
        "highest": 2,
    }
    assert await frames(resource_only) == []
    assert [frame.split("\n")[1] for frame in await frames(lease_only)] == ["event: lease.acquired"]
    resumed = target.subscribe(lambda name: name.startswith("billing."), f"{source.publisher}-1")
    assert [frame.split("\n")[1] for frame in await frames(resumed)] == ["event: fence.rejected"]


async def test_a_full_queue_drops_the_subscriber_and_forgets_it() -> None:
    """A subscriber whose queue is full is ended as a slow consumer and leaves the hub; it
    remembers the last event it was given, for its stream.dropped."""
    source, target = EventHub(StreamConfig()), EventHub(StreamConfig(subscriber_queue=2))
    slow = target.subscribe(everything, None)
    source.record(acquired("one"))
    carry(source, target)
    await frames(slow)
    assert slow.last_event_id == f"{source.publisher}-1"
    for name in ("two", "three", "four"):
        source.record(acquired(name))
    carry(source, target)
    assert slow.ending == "slow-consumer"
    assert target.streams == 0
    assert target.dropped_streams == 1
    assert await slow.take(0) == b""


async def test_the_stream_cap_and_shutdown_refuse_new_streams_and_end_open_ones() -> None:
    """max_streams subscribers at most; close() ends them and refuses more."""
    hub = EventHub(StreamConfig(max_streams=1))
    open_one = hub.subscribe(everything, None)
    with pytest.raises(TooManyStreams):
        hub.subscribe(everything, None)
    hub.close()
    assert open_one.ending == "shutting-down"
    with pytest.raises(ShuttingDown):
        hub.subscribe(everything, None)


async def test_one_principal_cannot_take_every_stream() -> None:
    """Past max_streams_per_principal a principal's next stream is refused (naming the
    principal's cap), while another principal still gets one; a stream closed frees its slot.
    The anonymous caller (authentication off) is held to the process's cap only."""
    hub = EventHub(StreamConfig(max_streams=4, max_streams_per_principal=2))
    first = hub.subscribe(everything, None, "reader")
    hub.subscribe(everything, None, "reader")
    with pytest.raises(TooManyStreams) as refused:
        hub.subscribe(everything, None, "reader")
    assert (refused.value.limit, refused.value.per) == (2, "principal")
    assert "'reader'" in refused.value.detail
    hub.subscribe(everything, None, "admin")
    hub.unsubscribe(first)
    hub.subscribe(everything, None, "reader")

    anonymous = EventHub(StreamConfig(max_streams=3, max_streams_per_principal=1))
    for _ in range(3):
        anonymous.subscribe(everything, None, None)
    with pytest.raises(TooManyStreams) as full:
        anonymous.subscribe(everything, None, None)
    assert (full.value.limit, full.value.per) == (3, "process")


async def test_a_stream_dropped_before_its_first_event_names_where_to_resume() -> None:
    """A burst larger than the queue drops a stream that was never sent an event: its
    stream.dropped names the newest event at its start (resuming from it replays the burst),
    the id it resumed from, or, on a replica that has received no event yet, an id that
    resumes with stream.reset: never nothing, which would resume silently past the burst."""
    source, target = EventHub(StreamConfig()), EventHub(StreamConfig(subscriber_queue=3))
    fresh = target.subscribe(everything, None)
    source.record(acquired("before"))
    carry(source, target)
    after_one = target.subscribe(everything, None)
    resumed = target.subscribe(everything, f"{source.publisher}-1")
    for index in range(10):
        source.record(acquired(f"burst-{index}"))
    carry(source, target)
    assert [s.ending for s in (fresh, after_one, resumed)] == ["slow-consumer"] * 3
    assert after_one.last_event_id == resumed.last_event_id == f"{source.publisher}-1"
    replayed = await frames(target.subscribe(everything, after_one.last_event_id))
    assert len(replayed) == 10
    assert fresh.last_event_id is not None
    (reset,) = await frames(target.subscribe(everything, fresh.last_event_id))
    assert reset.startswith("event: stream.reset\n")


async def test_a_malformed_notification_is_ignored() -> None:
    """Anything else sent on the channel is logged and skipped, never raised to the listener."""
    hub = EventHub(StreamConfig())
    subscription = hub.subscribe(everything, None)
    for payload in ("not an event", "E\tonly-an-id", "", "X\ta\tb\tc\td"):
        hub.deliver(payload)
    assert subscription.ending is None
    assert await subscription.take(0) == b""


def test_an_event_too_large_for_a_notification_is_dropped_and_counted() -> None:
    """A single event over the limit cannot be sent: it is counted, and a reset follows."""
    hub = EventHub(StreamConfig())
    hub.record(AlertEvent("opened", "missed", "job", "w", "x" * MAX_PAYLOAD_BYTES))
    assert list(hub.take_batches()) == []
    assert hub.dropped_events == 1
    ((payload, count),) = hub.take_batches()
    assert count == 0
    assert payload.startswith("R\tan event too large")


# One event of each streamed type (tests/unit/test_status_watch_lines.py renders each too).
ONE_OF_EACH: list[Event] = [
    LeaseEvent("acquired", "a", "h", 1),
    LeaseEvent("taken_over", "a", "h", 2, "g", 1),
    LeaseEvent("released", "a", "h", 1),
    LeaseEvent("renew_refused", "a", "h", 1),
    LeaseEvent("force_released", "a", "(force-released)", 3, "h", 2, "admin"),
    WindowEvent("claimed", "job", "w", "job", "h", 1, 1),
    WindowEvent("completed", "job", "w", "job", "h", 1, 1, 2.0),
    FenceEvent("ledger", "a", 1, "stale_generation", 2),
    AlertEvent("opened", "missed", "job", "w", "missed"),
    AlertEvent("resolved", "missed", "job", "w", "completed"),
]


def test_the_documented_types_are_exactly_the_streamed_ones() -> None:
    """EVENT_TYPES (in OpenAPI) names each type the stream sends, and no other."""
    found = [streamed(event, 0.0) for event in ONE_OF_EACH]
    assert sorted(item[1]["type"] for item in found if item is not None) == sorted(EVENT_TYPES)
