"""Lease handles against the real service: renewal keeps a lease, blocked or refused renewals
mark it lost in time (cancelling the async block), exit releases, and waiting hands over."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time

import asyncpg
import pytest

from tenure import (
    AsyncTenure,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    RetryPolicy,
    Tenure,
)
from tests.client.run_commands import WORKER
from tests.support.live_service import Proxy
from tests.support.processes import Processes

TTL = 1.0
INTERVAL = TTL / 3
# Scheduling slack on a loaded 2-core machine.
SLACK = 0.25
FAST_RETRY = RetryPolicy(attempts=2, backoff=0.02, max_backoff=0.05)


async def _expire(database_url: str, name: str) -> None:
    """Expire a lease in the database, as if its holder had stalled past its TTL."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("UPDATE leases SET expires_at = now() WHERE name = $1", name)
    finally:
        await connection.close()


@pytest.mark.slow
def test_renewal_keeps_a_sync_lease_for_five_ttls(client: Tenure, service_url: str) -> None:
    """Renewing every third of the TTL keeps the lease for 5× its TTL: nobody else gets it."""
    with Tenure(service_url) as rival, client.lease("job", TTL) as lease:
        deadline = time.monotonic() + 5 * TTL
        while time.monotonic() < deadline:
            with pytest.raises(LeaseHeld):
                rival.acquire("job", TTL)
            assert not lease.lost
            lease.check()
            time.sleep(0.2)
        assert client.get_lease("job").generation == lease.generation == 1
    assert not client.get_lease("job").held


@pytest.mark.slow
async def test_renewal_keeps_an_async_lease_for_five_ttls(service_url: str) -> None:
    """The async handle renews in a task: 5× the TTL later the lease is still the same holding."""
    async with AsyncTenure(service_url) as client, AsyncTenure(service_url) as rival:
        async with client.lease("job", TTL) as lease:
            deadline = time.monotonic() + 5 * TTL
            while time.monotonic() < deadline:
                with pytest.raises(LeaseHeld):
                    await rival.acquire("job", TTL)
                assert not lease.lost
                await asyncio.sleep(0.2)
            assert (await client.get_lease("job")).generation == 1
        assert not (await client.get_lease("job")).held


@pytest.mark.slow
def test_blocked_renewals_mark_a_sync_lease_lost_within_one_ttl(proxy: Proxy) -> None:
    """Renewals without answer: `lost` turns true within one TTL, the event is set, on_lost is
    called, check() raises, and leaving the block raises LeaseLost — not earlier than due."""
    losses: list[LeaseLost] = []
    noticed: list[float] = []

    def hold(client: Tenure) -> None:
        with client.lease("job", TTL, on_lost=losses.append) as lease:
            time.sleep(2 * INTERVAL)  # a few renewals succeed
            proxy.blackhole()
            blocked = time.monotonic()
            assert lease.wait_lost(TTL + 1)
            noticed.append(time.monotonic() - blocked)
            assert lease.lost
            with pytest.raises(LeaseLost, match="no renewal succeeded"):
                lease.check()
            time.sleep(0.1)  # the callback runs on the renewal thread
            proxy.restore()

    with Tenure(proxy.url, timeout=0.5, retry=FAST_RETRY) as client:
        with pytest.raises(LeaseLost):
            hold(client)
        assert TTL - INTERVAL - SLACK <= noticed[0] <= TTL + SLACK
        assert len(losses) == 1
        assert losses[0].status is None  # decided locally, by the monotonic clock
        # Released on exit once the link was back; or, when a renewal reached the service but
        # its answer was swallowed, the release names an older grant and ends nothing: the
        # holding then expires within its TTL.
        deadline = time.monotonic() + TTL + SLACK
        while client.get_lease("job").held:
            assert time.monotonic() < deadline
            time.sleep(0.05)


@pytest.mark.slow
async def test_blocked_renewals_cancel_the_async_block_within_one_ttl(proxy: Proxy) -> None:
    """Renewals without answer: the task in the `async with` block is cancelled within one TTL
    and LeaseLost is raised out of the block."""
    noticed: list[float] = []

    async def hold(client: AsyncTenure) -> None:
        async with client.lease("job", TTL) as lease:
            await asyncio.sleep(2 * INTERVAL)
            proxy.blackhole()
            blocked = time.monotonic()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                noticed.append(time.monotonic() - blocked)
                assert lease.lost
                proxy.restore()
                raise

    async with AsyncTenure(proxy.url, timeout=0.5, retry=FAST_RETRY) as client:
        with pytest.raises(LeaseLost) as caught:
            await hold(client)
        assert TTL - INTERVAL - SLACK <= noticed[0] <= TTL + SLACK  # the block was cancelled
        assert isinstance(caught.value.__cause__, asyncio.CancelledError)


@pytest.mark.slow
def test_renewal_answered_lease_lost_marks_the_lease_lost_at_once(
    client: Tenure, service_url: str, database_url: str
) -> None:
    """When the service answers a renewal `lease-lost` (taken over), the handle is lost at the
    next renewal, well before its local deadline."""
    ttl = 3.0
    reasons: list[LeaseLost | None] = []

    def hold(rival: Tenure) -> None:
        with client.lease("job", ttl) as lease:
            asyncio.run(_expire(database_url, "job"))
            taken = rival.acquire("job", 30)
            assert taken.generation == lease.generation + 1
            started = time.monotonic()
            assert lease.wait_lost(ttl)
            assert time.monotonic() - started <= ttl / 3 + SLACK
            reasons.append(lease.lost_reason)
            with pytest.raises(LeaseLost):
                lease.check()

    with Tenure(service_url) as rival:
        with pytest.raises(LeaseLost):
            hold(rival)
        assert reasons[0] is not None
        assert reasons[0].status == 409  # the service's answer, not the local deadline
        assert rival.get_lease("job").holder == rival.holder  # exit did not release the rival


async def test_taken_over_async_lease_cancels_the_block(
    service_url: str, database_url: str
) -> None:
    """A takeover seen by the async renewer cancels the block with the service's LeaseLost."""
    async with AsyncTenure(service_url) as client, AsyncTenure(service_url) as rival:

        async def hold() -> None:
            async with client.lease("job", 3.0, renew_every=0.2):
                await _expire(database_url, "job")
                await rival.acquire("job", 30)
                await asyncio.sleep(30)

        started = time.monotonic()
        with pytest.raises(LeaseLost) as caught:
            await hold()
        assert time.monotonic() - started < 1.5  # at the next renewal, not at the TTL
        assert caught.value.status == 409
        assert (await rival.get_lease("job")).holder == rival.holder


async def test_outside_cancellation_is_not_turned_into_lease_lost(service_url: str) -> None:
    """Cancelling the task from elsewhere propagates CancelledError and still releases."""
    async with AsyncTenure(service_url) as client:
        inside = asyncio.Event()

        async def hold() -> None:
            async with client.lease("job", 30):
                inside.set()
                await asyncio.sleep(30)

        task = asyncio.create_task(hold())
        # Cancel inside the block, however long the acquire takes on a loaded machine.
        await asyncio.wait_for(inside.wait(), timeout=20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not (await client.get_lease("job")).held


def test_exit_releases_even_when_the_block_raises(client: Tenure, service_url: str) -> None:
    """An error in the block propagates, and the lease is released for the next holder."""
    headers: list[dict[str, str]] = []

    def fail() -> None:
        with client.lease("job", 30) as lease:
            headers.append(lease.fencing_headers())
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail()
    assert headers == [{"Fencing-Token": "job/1"}]
    assert not client.get_lease("job").held
    with Tenure(service_url) as other:
        assert other.acquire("job", 30).generation == 2


def test_one_client_holds_a_name_through_one_handle_at_a_time(client: Tenure) -> None:
    """A second handle of the same client (same holder) is refused, not given the same holding."""
    second = client.lease("job", 30)
    with client.lease("job", 30), pytest.raises(LeaseHeld, match="another handle of this client"):
        second.__enter__()
    with client.lease("job", 30) as again:
        assert again.generation == 2


def test_held_lease_raises_lease_held(client: Tenure, service_url: str) -> None:
    """Entering a handle for a lease held elsewhere raises LeaseHeld without waiting."""
    client.acquire("job", 30)
    with Tenure(service_url) as other:
        handle = other.lease("job", 30)
        started = time.monotonic()
        with pytest.raises(LeaseHeld):
            handle.__enter__()
        assert time.monotonic() - started < 1


def _server_waits(client: Tenure) -> bool:
    try:
        client.acquire("probe-wait", 1, wait=0.01)
    except InvalidRequest as error:
        if any(item.get("field") == "wait_seconds" for item in error.errors):
            return False
        raise
    return True


@pytest.mark.slow
@pytest.mark.timeout(40)
def test_waiter_acquires_right_after_the_release(client: Tenure, service_url: str) -> None:
    """A waiter (wait=30) on a lease with a 60 s TTL holds it right after the release: it was
    woken by the service, not timed out."""
    if not _server_waits(client):
        pytest.skip("the service does not accept wait_seconds yet")
    holding = client.acquire("job", 60)
    acquired: list[float] = []
    with Tenure(service_url) as waiter:

        def wait_for_it() -> None:
            with waiter.lease("job", 60, wait=30) as lease:
                acquired.append(time.monotonic())
                assert lease.generation == holding.generation + 1

        thread = threading.Thread(target=wait_for_it)
        thread.start()
        time.sleep(1.0)
        assert not acquired
        released = time.monotonic()
        client.release(holding)
        thread.join(35)
    assert acquired
    assert acquired[0] - released < 2.0


@pytest.mark.slow
@pytest.mark.timeout(40)
def test_waiter_acquires_within_the_ttl_after_the_holder_dies(
    client: Tenure, processes: Processes, service_url: str
) -> None:
    """A waiter (wait=30) gets the lease of a holder killed with SIGKILL within its TTL: the
    service notices the expiry itself."""
    if not _server_waits(client):
        pytest.skip("the service does not accept wait_seconds yet")
    ttl = 1.5
    holder = processes.python(WORKER, "hold", service_url, "job", str(ttl))
    assert holder.stdout is not None
    held = json.loads(holder.stdout.readline())
    holder.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    with client.lease("job", 60, wait=30) as lease:
        elapsed = time.monotonic() - killed
        assert lease.generation == held["generation"] + 1
    assert elapsed <= ttl + SLACK
