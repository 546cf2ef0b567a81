"""The handles of one client share one renewal loop: the renewals due together go in one batch
request, each handle still gets its own verdict, a batch the service refuses as a whole is
renewed one holding at a time, and a rate limit slows renewals down without ending holdings."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack, ExitStack

import asyncpg
import httpx
import pytest

from tenure import AsyncTenure, LeaseLost, Tenure
from tests.client.test_lease import SLACK, TTL, _expire
from tests.support.live_service import StartService

HANDLES = 10
BATCH_PATH = "/v1/leases/renew"


def _renewal(request: httpx.Request) -> list[str] | None:
    """The lease names a renew request names (None: not a renewal)."""
    if not request.url.path.endswith("/renew"):
        return None
    if request.url.path != BATCH_PATH:
        return [request.url.path]
    return [lease["name"] for lease in json.loads(request.content)["leases"]]


class Recording(httpx.HTTPTransport):
    """The real transport, noting each renew request and its answer's status."""

    def __init__(self) -> None:
        super().__init__()
        self.renewals: list[tuple[list[str], int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        names = _renewal(request)
        if names is not None:
            self.renewals.append((names, response.status_code))
        return response


class AsyncRecording(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.renewals: list[tuple[list[str], int]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        names = _renewal(request)
        if names is not None:
            self.renewals.append((names, response.status_code))
        return response


def _check_in_step(renewals: list[tuple[list[str], int]], seconds: float) -> None:
    """While every handle is held, all renewals go in batch requests; within a few rounds the
    handles are in step, and from then on one request a round renews them all (apart: ten
    requests a round)."""
    sizes = [len(names) for names, _ in renewals]
    assert all(status == 200 for _, status in renewals)
    assert len(sizes) <= seconds / (TTL / 3) + 2, (sizes, seconds)
    assert all(size == HANDLES for size in sizes[4:]), sizes


@pytest.mark.slow
def test_a_sync_clients_handles_renew_in_one_request_per_round(service_url: str) -> None:
    """Ten handles entered at different moments fall into step: a round of renewals is one
    request, and every lease stays held by its own generation."""
    recording, started = Recording(), time.monotonic()
    with Tenure(service_url, transport=recording) as client, ExitStack() as stack:
        handles = []
        for index in range(HANDLES):
            handles.append(stack.enter_context(client.lease(f"job-{index}", TTL)))
            time.sleep(TTL / 3 / HANDLES)
        time.sleep(3 * TTL)
        _check_in_step(recording.renewals, time.monotonic() - started)
        for handle in handles:
            handle.check()
            lease = client.get_lease(handle.name)
            assert lease.held
            assert lease.generation == handle.generation


@pytest.mark.slow
async def test_an_async_clients_handles_renew_in_one_request_per_round(service_url: str) -> None:
    recording, started = AsyncRecording(), time.monotonic()
    async with AsyncTenure(service_url, transport=recording) as client, AsyncExitStack() as stack:
        handles = []
        for index in range(HANDLES):
            handles.append(await stack.enter_async_context(client.lease(f"job-{index}", TTL)))
            await asyncio.sleep(TTL / 3 / HANDLES)
        await asyncio.sleep(3 * TTL)
        _check_in_step(recording.renewals, time.monotonic() - started)
        for handle in handles:
            handle.check()
            lease = await client.get_lease(handle.name)
            assert lease.held
            assert lease.generation == handle.generation


@pytest.mark.slow
def test_a_holding_lost_in_a_batch_ends_only_its_own_handle(
    client: Tenure, service_url: str, database_url: str
) -> None:
    """Of three handles renewed together, the one taken over is lost at the next renewal with
    the service's verdict; the other two keep their leases."""
    interval = 0.2
    with Tenure(service_url) as rival, ExitStack() as stack:
        a, b, c = (
            stack.enter_context(client.lease(name, 3.0, renew_every=interval))
            for name in ("a", "b", "c")
        )
        asyncio.run(_expire(database_url, "b"))
        rival.acquire("b", 30)
        started = time.monotonic()
        assert b.wait_lost(3.0)
        assert time.monotonic() - started <= interval + SLACK
        assert b.lost_reason is not None
        assert b.lost_reason.status == 409
        time.sleep(3 * interval)
        for kept in (a, c):
            kept.check()
            assert client.get_lease(kept.name).generation == kept.generation
        with pytest.raises(LeaseLost):
            stack.close()
        assert rival.get_lease("b").holder == rival.holder


@pytest.mark.slow
def test_a_batch_refused_as_a_whole_is_renewed_one_holding_at_a_time(
    start_service: StartService,
) -> None:
    one_per_batch = start_service(max_batch_size=1)  # refuses batches of more than one holding
    recording = Recording()
    with Tenure(one_per_batch.url, transport=recording) as client, ExitStack() as stack:
        handles = [stack.enter_context(client.lease(f"job-{n}", TTL)) for n in range(3)]
        time.sleep(2 * TTL)
        for handle in handles:
            handle.check()
            assert client.get_lease(handle.name).generation == handle.generation
    refused = [names for names, status in recording.renewals if status != 200]
    assert refused
    assert all(len(names) > 1 for names in refused)
    renewed = [names for names, status in recording.renewals if status == 200]
    assert renewed
    assert all(len(names) == 1 for names in renewed)


@pytest.mark.slow
def test_a_rate_limited_renewal_is_retried_not_taken_for_a_lost_lease(
    start_service: StartService, database_url: str
) -> None:
    """Renewals sent faster than the principal's rate are refused 429; the handle retries them
    (after the Retry-After, within its interval) and keeps its lease, renewed all along."""
    # Each principal may send 3 requests a second, after a burst of 3.
    rate_limited = start_service(rate_limit_per_second=3, rate_limit_burst=3)
    recording = Recording()
    with (
        Tenure(rate_limited.url, transport=recording) as client,
        client.lease("job", 1.0, renew_every=0.1) as handle,
    ):
        time.sleep(2.0)  # twice the TTL: held only if renewals got through
        handle.check()
    statuses = [status for _, status in recording.renewals]
    assert 429 in statuses
    assert 200 in statuses
    assert asyncio.run(_generation(database_url, "job")) == handle.generation


async def _generation(database_url: str, name: str) -> int:
    connection = await asyncpg.connect(database_url)
    try:
        generation: int = await connection.fetchval(
            "SELECT generation FROM leases WHERE name = $1", name
        )
        return generation
    finally:
        await connection.close()


@pytest.mark.slow
def test_a_holding_left_undecided_by_a_fenced_transaction_is_retried_not_lost(
    start_service: StartService, database_url: str
) -> None:
    """A fenced transaction holds one lease row FOR SHARE across a few renewals: the batch
    answers that holding `undecided`, and its handle retries instead of ending; both handles
    keep their leases, and the busy one is renewed once the transaction commits."""
    short_lock_timeout = start_service(lock_timeout_ms=200)  # waits 0.2 s for a locked row
    interval, recording = 0.2, Recording()
    with Tenure(short_lock_timeout.url, transport=recording) as client, ExitStack() as stack:
        busy, other = (
            stack.enter_context(client.lease(name, 3.0, renew_every=interval))
            for name in ("busy", "other")
        )

        async def hold_row() -> None:
            connection = await asyncpg.connect(database_url)
            try:
                async with connection.transaction():
                    await connection.execute("SELECT 1 FROM leases WHERE name = 'busy' FOR SHARE")
                    await asyncio.sleep(1.2)
            finally:
                await connection.close()

        asyncio.run(hold_row())
        time.sleep(3 * interval)
        for handle in (busy, other):
            handle.check()
            lease = client.get_lease(handle.name)
            assert lease.held
            assert lease.generation == handle.generation
            assert lease.expires_in_seconds > 2.0
        assert all(status == 200 for _, status in recording.renewals)
