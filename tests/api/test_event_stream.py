"""GET /v1/events/stream on a real database, through a real HTTP server: the events and their
fields, namespaces and roles, Last-Event-ID, slow consumers, the stream cap, and the listener's
reconnection."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr

from tenure_server.db.notifications import LISTENER_NAME
from tenure_server.domain.events import LeaseEvent
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_leases import held, release
from tests.integration.test_monitor import complete, eventually, fast_settings, overdue_job, sql
from tests.support.event_streams import STREAM, EventReader, served, served_with_adapters, stream
from tests.support.tokens import bearer, tokens_toml

LEASE_FIELDS = {"type", "at", "lease", "holder", "generation"}
WINDOW_FIELDS = {"type", "at", "job", "window", "lease", "holder", "generation", "attempt"}


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with served(create_app(settings)) as served_client:
        yield served_client


async def test_lease_transitions_are_streamed_with_their_fields(
    client: httpx.AsyncClient, database_url: str
) -> None:
    """A grant, a takeover, a refused renewal (a lost lease) and a release arrive in order,
    each with `id`, its `event` type and the documented data."""
    async with stream(client) as events:
        first = await held(client, "nightly", "a")
        await sql(database_url, "UPDATE leases SET expires_at = now() - interval '1 second'")
        second = await held(client, "nightly", "b")
        renew = {"holder": "a", "generation": 1, "ttl_seconds": 30}
        lost = await client.post("/v1/leases/nightly/renew", json=renew)
        assert lost.status_code == 409
        assert (await release(client, second)).status_code == 200
        received = await events.events(4)

    assert events.retry is not None
    assert [event.event for event in received] == [
        "lease.acquired",
        "lease.taken_over",
        "lease.lost",
        "lease.released",
    ]
    acquired, taken_over, lost_lease, released = (event.data for event in received)
    assert set(acquired) == LEASE_FIELDS
    assert acquired | {"at": None} == {
        "type": "lease.acquired",
        "at": None,
        "lease": "nightly",
        "holder": "a",
        "generation": first["generation"],
    }
    assert acquired["at"].endswith("Z")
    assert taken_over | {"at": None} == {
        "type": "lease.taken_over",
        "at": None,
        "lease": "nightly",
        "holder": "b",
        "generation": 2,
        "previous_holder": "a",
        "previous_generation": 1,
    }
    assert lost_lease | {"at": None} == {
        "type": "lease.lost",
        "at": None,
        "lease": "nightly",
        "holder": "a",
        "generation": 1,
    }
    assert released | {"at": None} == {
        "type": "lease.released",
        "at": None,
        "lease": "nightly",
        "holder": "b",
        "generation": 2,
    }
    ids = [event.id for event in received]
    assert all(ids)
    assert len(set(ids)) == 4


async def test_window_claims_and_completions_are_streamed(client: httpx.AsyncClient) -> None:
    """window.claimed and window.completed carry the holding, the attempt and, once completed,
    the run's duration."""
    window = "/v1/jobs/close-day/windows/2026-09-25"
    holding = {"holder": "a", "lease": "close-day", "generation": 1}
    async with stream(client) as events:
        await held(client, "close-day", "a")
        assert (await client.post(f"{window}/claim", json=holding)).status_code == 200
        assert (await client.post(f"{window}/complete", json=holding)).status_code == 200
        claimed = await events.until("window.claimed")
        completed = await events.until("window.completed")

    facts = {
        "job": "close-day",
        "window": "2026-09-25",
        "lease": "close-day",
        "holder": "a",
        "generation": 1,
        "attempt": 1,
    }
    assert set(claimed.data) == WINDOW_FIELDS
    assert claimed.data == {"type": "window.claimed", "at": claimed.data["at"], **facts}
    assert set(completed.data) == WINDOW_FIELDS | {"duration_seconds"}
    assert completed.data["duration_seconds"] >= 0
    assert completed.data["type"] == "window.completed"


async def test_alerts_opening_and_resolving_are_streamed(database_url: str) -> None:
    """The monitor's alert transitions reach the stream: a missed window opens an alert, its
    completion resolves it."""
    settings = fast_settings(database_url)
    async with served(create_app(settings)) as client, stream(client) as events:
        window = await overdue_job(client, database_url, "close-day")
        opened = await events.until("alert.opened")
        await complete(client, "close-day", window)
        resolved = await events.until("alert.resolved")

    assert opened.data | {"at": None, "summary": None} == {
        "type": "alert.opened",
        "at": None,
        "kind": "missed",
        "subject": "close-day",
        "window": window,
        "summary": None,
    }
    assert opened.data["summary"]
    assert set(resolved.data) == set(opened.data)
    assert (resolved.data["kind"], resolved.data["subject"]) == ("missed", "close-day")


async def test_a_quiet_stream_sends_keepalive_comments(database_url: str) -> None:
    """With nothing happening the stream sends `: keepalive` every
    TENURE_EVENTS_KEEPALIVE_SECONDS, so that proxies and clients see it alive."""
    settings = Settings(database_url=database_url, events_keepalive_seconds=0.2)
    async with served(create_app(settings)) as client, stream(client) as events:
        await held(client, "after-quiet", "a")
        await asyncio.sleep(0.7)
        await held(client, "after-keepalives", "a")
        await events.events(2)
    assert events.retry == "2000"
    assert events.comments[0] == "connected"
    assert events.comments.count("keepalive") >= 2


async def test_a_namespace_limits_the_stream_to_names_under_it(client: httpx.AsyncClient) -> None:
    """?namespace= keeps the events whose name starts with it."""
    async with stream(client, namespace="billing.") as events:
        await held(client, "ops.sync", "a")
        await held(client, "billing.close", "a")
        only = await events.next()
    assert only is not None
    assert only.data["lease"] == "billing.close"


async def test_the_stream_is_for_readers_of_their_namespaces(database_url: str) -> None:
    """Authentication on: no token is 401; a reader sees only its namespaces' events, and a
    namespace outside them is 403."""
    settings = Settings(database_url=database_url, tokens=SecretStr(tokens_toml()))
    async with served(create_app(settings)) as client:
        assert (await client.get(STREAM)).status_code == 401
        refused = await client.get(
            STREAM, params={"namespace": "ops."}, headers=bearer("billing-reader")
        )
        assert refused.status_code == 403
        assert refused.json()["type"] == "/problems/forbidden"
        async with stream(client, headers=bearer("billing-reader")) as events:
            for name in ("ops.sync", "billing.close"):
                owner = "ops-client" if name.startswith("ops.") else "billing-client"
                answer = await client.post(
                    f"/v1/leases/{name}/acquire",
                    json={"holder": "h", "ttl_seconds": 30},
                    headers=bearer(owner),
                )
                assert answer.status_code == 200, answer.text
            only = await events.next()
    assert only is not None
    assert only.data["lease"] == "billing.close"


async def test_bad_stream_parameters_are_problems(client: httpx.AsyncClient) -> None:
    """An over-long namespace or Last-Event-ID is refused with a 422 problem, as documented."""
    for params, headers in (
        ({"namespace": "n" * 1000}, {}),
        ({}, {"Last-Event-ID": "x" * 1000}),
        ({"last_event_id": "x" * 1000}, {}),
    ):
        refused = await client.get(STREAM, params=params, headers=headers)
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"] == "/problems/validation-error"


async def test_last_event_id_resumes_right_after_that_event(client: httpx.AsyncClient) -> None:
    """Resuming after an event replays exactly the events that followed it, from the header or
    the query parameter, then goes on live; an id not in the history gives stream.reset."""
    async with stream(client) as events:
        for index in range(4):
            await held(client, f"job-{index}", "a")
        first_four = await events.events(4)
    ids = [event.id for event in first_four]
    assert ids[0] is not None

    async with stream(client, headers={"Last-Event-ID": ids[1] or ""}) as resumed:
        replayed = await resumed.events(2)
        await held(client, "job-live", "a")
        live = await resumed.next()
    assert [event.id for event in replayed] == ids[2:]
    assert live is not None
    assert live.data["lease"] == "job-live"

    async with stream(client, last_event_id=ids[2] or "") as by_query:
        assert [event.id for event in await by_query.events(1)] == ids[3:4]

    async with stream(client, headers={"Last-Event-ID": "nobody-1"}) as unknown:
        reset = await unknown.next()
    assert reset is not None
    assert reset.event == "stream.reset"
    assert reset.id is None
    assert reset.data["reason"] == "history-gap"
    assert reset.data["type"] == "stream.reset"


async def test_a_consumer_that_does_not_read_is_dropped(database_url: str) -> None:
    """A stream whose consumer stops reading fills its queue and is dropped: the hub forgets it
    (its memory is freed) while a consumer that reads goes on; once the slow one reads again,
    its last event is stream.dropped naming the last event it was sent."""
    settings = Settings(database_url=database_url, events_subscriber_queue=100)
    app = create_app(settings)
    async with served_with_adapters(app) as (client, adapters), stream(client) as reading:
        hub = adapters.events
        # A small receive buffer, set before connecting (the kernel would grow it otherwise),
        # and a reader that buffers little: once they are full, the consumer reads nothing.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", client.base_url.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
        writer.write(f"GET {STREAM} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        await writer.drain()
        await eventually(lambda: hub.streams == 2)
        keeping_up = asyncio.create_task(drain(reading))
        # Bursts well under the queue, of large events, until the socket buffers are full.
        for burst in range(400):
            for index in range(40):
                hub.record(LeaseEvent("acquired", f"flood-{burst}-{index}-" + "x" * 3000, "h", 1))
            await asyncio.sleep(0.1)
            if hub.dropped_streams:
                break
        assert hub.dropped_streams == 1
        assert hub.streams == 1  # the reading consumer's: the slow one is forgotten
        exposition = (await client.get("/metrics")).text
        assert "tenure_event_streams_dropped_total 1.0" in exposition
        assert "tenure_event_streams 1.0" in exposition
        body = await asyncio.wait_for(reader.read(), 10)  # to the end: the server closed it
        writer.close()
        keeping_up.cancel()
    text = unchunked(body).decode()
    tail = text.rstrip("\n").rsplit("\n\n", 1)[-1]
    assert tail.startswith("event: stream.dropped\n"), tail[-500:]
    last_id = text.rsplit("id: ", 1)[-1].split("\n", 1)[0]
    assert f'"last_event_id":"{last_id}"' in tail


async def drain(events: EventReader) -> None:
    while await events.next(within=60) is not None:
        pass


def unchunked(response: bytes) -> bytes:
    """The body of a raw HTTP/1.1 response in chunked transfer coding."""
    rest = response.split(b"\r\n\r\n", 1)[1]
    body = b""
    while rest:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        body, rest = body + rest[:size], rest[size + 2 :]
    return body


async def test_the_stream_cap_answers_503_and_a_disconnect_frees_its_slot(
    database_url: str,
) -> None:
    """Past TENURE_EVENTS_MAX_STREAMS a stream is refused with 503 and Retry-After; closing one
    lets the next in. With authentication off every caller is the anonymous principal, held to
    that cap only, not to TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL."""
    settings = Settings(
        database_url=database_url, events_max_streams=2, events_max_streams_per_principal=1
    )
    app = create_app(settings)
    async with served_with_adapters(app) as (client, adapters):
        hub = adapters.events
        async with stream(client), stream(client):
            refused = await client.get(STREAM)
            assert refused.status_code == 503
            assert refused.headers["retry-after"]
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.json() | {"detail": None} == {
                "type": "/problems/too-many-streams",
                "title": "Too many event streams on this process; retry",
                "status": 503,
                "detail": None,
                "retry_after_seconds": 5,
                "limit": 2,
                "per": "process",
            }
        await eventually(lambda: hub.streams == 0)
        async with stream(client) as events:
            await held(client, "again", "a")
            assert (await events.until("lease.acquired")).data["lease"] == "again"


async def test_one_principal_cannot_starve_the_others_of_streams(database_url: str) -> None:
    """A reader holding TENURE_EVENTS_MAX_STREAMS_PER_PRINCIPAL streams (its dashboard tabs) is
    refused one more (503 too-many-streams, per principal, Retry-After; counted in /metrics),
    while the admin's stream still opens and carries events and the reader's dashboard answers."""
    settings = Settings(
        database_url=database_url,
        tokens=SecretStr(tokens_toml()),
        events_max_streams=3,
        events_max_streams_per_principal=2,
    )
    reader = bearer("billing-reader")
    async with (
        served(create_app(settings)) as client,
        stream(client, headers=reader),
        stream(client, headers=reader),
    ):
        refused = await client.get(STREAM, headers=reader)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "5"
        problem = refused.json()
        assert (problem["type"], problem["limit"], problem["per"]) == (
            "/problems/too-many-streams",
            2,
            "principal",
        )
        assert "'billing-reader'" in problem["detail"]
        async with stream(client, headers=bearer("admin")) as events:
            acquire = {"holder": "a", "ttl_seconds": 30}
            answer = await client.post(
                "/v1/leases/billing.close/acquire", json=acquire, headers=bearer("admin")
            )
            assert answer.status_code == 200, answer.text
            assert (await events.until("lease.acquired")).data["lease"] == "billing.close"
        assert (await client.get("/ui", headers=reader)).status_code == 200
        exposition = (await client.get("/metrics", headers=bearer("admin"))).text
        assert 'tenure_event_streams_refused_total{per="principal"} 1.0' in exposition


async def test_a_lost_listener_resets_the_streams_and_events_flow_again(
    client: httpx.AsyncClient, database_url: str
) -> None:
    """When the listening connection is killed, streams get stream.reset once it is back (the
    history cannot vouch for what was sent meanwhile), then live events again."""
    async with stream(client) as events:
        await held(client, "before", "a")
        before = await events.until("lease.acquired")
        killed = await sql(
            database_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = $1 AND datname = current_database()",
            LISTENER_NAME,
        )
        assert [row[0] for row in killed] == [True]
        reset = await events.until("stream.reset")
        await held(client, "after", "a")
        after = await events.until("lease.acquired")
    assert reset.data["reason"] == "history-gap"
    assert after.data["lease"] == "after"
    async with stream(client, headers={"Last-Event-ID": before.id or ""}) as resumed:
        gap = await resumed.next()
    assert gap is not None
    assert gap.event == "stream.reset"
