"""`Tenure` and `AsyncTenure` against the real service over HTTP: every operation, the errors the
service answers, and the transport behaviour (timeouts, retries, headers)."""

from __future__ import annotations

import time

import pytest

from tenure import (
    AsyncTenure,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    RetryPolicy,
    StaleGeneration,
    Tenure,
    TransportError,
    UnknownGeneration,
    WindowCompleted,
    WindowNotFound,
)
from tests.support.live_service import Proxy


def test_sync_client_runs_every_operation(client: Tenure, service_url: str) -> None:
    """acquire, renew, get, list, claim, complete, get_window, verify_fence, release."""
    lease = client.acquire("close-day", 30)
    assert (lease.name, lease.generation, lease.holder, lease.held) == (
        "close-day",
        1,
        client.holder,
        True,
    )
    assert client.acquire("close-day", 30).generation == 1  # idempotent for the same holder
    lease = client.renew(lease, 30)  # the latest answer: its grant is the one a release names
    assert lease.generation == 1
    assert client.get_lease("close-day").holder == client.holder
    client.acquire("close-week", 30)
    page = client.list_leases(prefix="close-", limit=1)
    assert [item.name for item in page.items] == ["close-day"]
    assert page.next_cursor is not None
    rest = client.list_leases(prefix="close-", cursor=page.next_cursor)
    assert [item.name for item in rest.items] == ["close-week"]
    window = client.claim_window("close-day", "2026-09-24", lease)
    assert (window.attempt, window.status) == (1, "running")
    done = client.complete_window("close-day", "2026-09-24", "close-day", 1)
    assert done.completed
    assert client.get_window("close-day", "2026-09-24").completed
    assert [w.window for w in client.list_windows("close-day").items] == ["2026-09-24"]
    assert client.verify_fence("ledger", lease).highest == 1
    released = client.release(lease)
    assert not released.held
    assert not client.release(lease).held  # releasing again is answered the same way


async def test_async_client_runs_every_operation(service_url: str) -> None:
    """The async client has the same operations with the same answers."""
    async with AsyncTenure(service_url) as client:
        acquired = await client.acquire("close-day", 30)
        lease = await client.renew(acquired, 30)
        assert lease.generation == acquired.generation
        assert (await client.get_lease("close-day")).held
        assert [item.name for item in (await client.list_leases()).items] == ["close-day"]
        await client.claim_window("close-day", "w1", lease)
        assert (await client.complete_window("close-day", "w1", lease)).completed
        assert (await client.get_window("close-day", "w1")).completed
        assert len((await client.list_windows("close-day")).items) == 1
        assert (await client.verify_fence("ledger", lease)).highest == lease.generation
        with pytest.raises(LeaseLost):
            await client.release(acquired)  # granted again (renewed) since: ends nothing
        assert not (await client.release(lease)).held


def test_a_release_names_the_grant_so_a_late_one_ends_nothing(client: Tenure) -> None:
    """A release from an older answer (the holder was granted the lease again since) ends
    nothing: `LeaseLost`, and the lease stays held. By name, the grant must be given."""
    acquired = client.acquire("job", 30)
    latest = client.renew(acquired, 30)
    with pytest.raises(LeaseLost):
        client.release(acquired)
    assert client.get_lease("job").held
    with pytest.raises(TypeError, match="grant"):
        client.release("job", latest.generation)
    assert not client.release("job", latest.generation, grant=latest.grant).held


def test_renew_many_renews_what_is_held_and_names_what_is_lost(
    client: Tenure, service_url: str
) -> None:
    """One request renews the holdings still held (handles, leases or pairs alike) and lists
    the ones this holder lost, by name and generation."""
    first, second = client.acquire("shard-1", 30), client.acquire("shard-2", 30)
    client.release(second)
    renewals = client.renew_many([first, ("shard-2", second.generation)], 60)
    assert [(lease.name, lease.ttl_seconds) for lease in renewals.renewed] == [("shard-1", 60)]
    assert renewals.lost == (("shard-2", second.generation),)


async def test_async_renew_many(service_url: str) -> None:
    async with AsyncTenure(service_url) as client:
        leases = [await client.acquire(f"shard-{i}", 30) for i in range(3)]
        renewals = await client.renew_many(leases, 30)
        assert sorted(lease.name for lease in renewals.renewed) == ["shard-0", "shard-1", "shard-2"]
        assert renewals.lost == ()


def test_verify_fences_decides_each_resource_as_a_single_verify(client: Tenure) -> None:
    """One request verifies a holding's generation on many resources: a superseded generation is
    refused on every one, even one that never saw its successor, each refusal carrying the
    exception a single verify would raise; the current generation is accepted."""
    first = client.acquire("job", 30)
    client.release(first)
    second = client.acquire("job", 30)
    client.verify_fence("ledger", second)
    verdicts = client.verify_fences(["ledger", "orders", "stock"], "job", first.generation)
    assert verdicts.accepted == ()
    assert [refusal.resource for refusal in verdicts.refused] == ["ledger", "orders", "stock"]
    for refusal in verdicts.refused:
        assert (refusal.lease, refusal.generation) == ("job", 1)
        assert isinstance(refusal.error, StaleGeneration)
        assert refusal.error.highest == second.generation
    current = client.verify_fences(["orders", "stock"], second)
    assert [fence.resource for fence in current.accepted] == ["orders", "stock"]


async def test_async_verify_fences(service_url: str) -> None:
    async with AsyncTenure(service_url) as client:
        lease = await client.acquire("job", 30)
        verdicts = await client.verify_fences(["a", "b"], lease)
        assert [fence.highest for fence in verdicts.accepted] == [1, 1]
        (forged,) = (await client.verify_fences(["c"], "job", 5)).refused
        assert isinstance(forged.error, UnknownGeneration)
        assert forged.error.current_generation == 1


def test_service_refusals_raise_their_exceptions(client: Tenure, service_url: str) -> None:
    """409/404/422 answers arrive as LeaseHeld, LeaseLost, WindowCompleted, StaleGeneration…"""
    first = client.acquire("job", 30)
    with Tenure(service_url) as other:
        with pytest.raises(LeaseHeld) as held:
            other.acquire("job", 30)
        assert held.value.holder == client.holder
        assert 0 < held.value.retry_after <= 30
        with pytest.raises(LeaseLost):
            other.renew("job", 30, generation=first.generation)
    with pytest.raises(LeaseNotFound):
        client.get_lease("nobody")
    with pytest.raises(WindowNotFound):
        client.get_window("job", "never")
    client.claim_window("job", "w", first)
    client.complete_window("job", "w", first)
    with pytest.raises(WindowCompleted):
        client.claim_window("job", "w", first)
    client.release(first)
    second = client.acquire("job", 30)
    client.verify_fence("ledger", second)
    with pytest.raises(StaleGeneration) as stale:
        client.verify_fence("ledger", "job", first.generation)
    assert stale.value.highest == second.generation
    with pytest.raises(UnknownGeneration):
        client.verify_fence("ledger", "job", 99)


def test_unreachable_service_raises_transport_error_after_bounded_retries(dead_url: str) -> None:
    """With nothing listening, the client retries `attempts` times, then raises TransportError."""
    policy = RetryPolicy(attempts=3, backoff=0.05, max_backoff=0.1)
    with Tenure(dead_url, retry=policy) as client:
        started = time.monotonic()
        with pytest.raises(TransportError):
            client.acquire("job", 30)
        assert time.monotonic() - started < 2


def test_timeout_applies_to_every_call(proxy: Proxy) -> None:
    """A service that never answers is given up on after `timeout` seconds per try."""
    proxy.blackhole()
    with Tenure(proxy.url, timeout=0.3, retry=RetryPolicy(attempts=2, backoff=0.01)) as client:
        started = time.monotonic()
        with pytest.raises(TransportError):
            client.get_lease("job")
        assert 0.6 <= time.monotonic() - started < 2.5


def test_token_is_sent_as_bearer_and_holder_is_per_client(proxy: Proxy) -> None:
    """TENURE_TOKEN goes in `Authorization: Bearer`; each client is its own holder."""
    with Tenure(proxy.url, token="s3cret") as first, Tenure(proxy.url) as second:
        first.acquire("job", 30)
        assert b"authorization: Bearer s3cret" in bytes(proxy.received).replace(
            b"Authorization", b"authorization"
        )
        assert first.holder != second.holder
        assert first.holder.count(":") >= 2


def test_from_env_reads_url_and_token(monkeypatch: pytest.MonkeyPatch, service_url: str) -> None:
    """from_env() takes TENURE_URL and TENURE_TOKEN; explicit arguments win."""
    monkeypatch.setenv("TENURE_URL", service_url)
    monkeypatch.setenv("TENURE_TOKEN", "t0k")
    with Tenure.from_env(holder="me") as client:
        assert client.base_url == service_url
        assert client.headers["Authorization"] == "Bearer t0k"
        assert client.acquire("job", 30).holder == "me"
    with Tenure.from_env("http://example.invalid", token="") as client:
        assert client.base_url == "http://example.invalid"
        assert "Authorization" not in client.headers
