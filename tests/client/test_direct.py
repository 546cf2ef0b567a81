"""`AsyncTenure` sends its requests straight through its default pool's aiohttp session
(`tenure._aiohttp_sender`), and through httpx's transport API when given a transport of its own:
both paths answer alike — the same values, the same errors for problems, 204s, timeouts, refused
and dropped connections — keep their connections open, and follow the environment's proxy
(issue 29). The httpx path here is the same pool given as `transport=`."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from httpx_aiohttp import AiohttpTransport

from tenure import (
    NO_RETRY,
    AsyncTenure,
    InvalidRequest,
    JobNotFound,
    JobSpec,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    TenureError,
    TransportError,
)
from tests.support.live_service import Proxy

PATHS = ["direct", "httpx"]
names = (f"direct-{n}" for n in itertools.count())
Call = Callable[[AsyncTenure], Awaitable[object]]


def client_on(path: str, url: str, **options: Any) -> AsyncTenure:
    """An `AsyncTenure` of `url` whose requests take `path`."""
    transport = AiohttpTransport() if path == "httpx" else None
    client = AsyncTenure(url, retry=NO_RETRY, transport=transport, **options)
    assert (client._direct is not None) is (path == "direct")
    return client


async def raised(path: str, url: str, call: Call, **options: Any) -> TenureError:
    """What `call` raises on a client of `url` whose requests take `path`."""
    async with client_on(path, url, **options) as client:
        with pytest.raises(TenureError) as caught:
            await call(client)
    return caught.value


async def raised_alike(url: str, call: Call, **options: Any) -> TenureError:
    """What `call` raises on either path, once it is seen to be the same error on both."""
    direct, through_httpx = [await raised(path, url, call, **options) for path in PATHS]
    assert type(direct) is type(through_httpx)
    assert str(direct) == str(through_httpx)
    return direct


@pytest.fixture
async def dropping_server() -> AsyncIterator[str]:
    """A server that reads each request and closes the connection without answering."""

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("path", PATHS)
async def test_both_paths_answer_operations_alike(path: str, service_url: str) -> None:
    """Acquire, renew, a listing with a query, release and a 204 answer the same on both paths."""
    async with client_on(path, service_url, holder="same") as client:
        name = f"{path}-lease:one.x"
        lease = await client.acquire(name, 30)
        assert (lease.name, lease.holder, lease.generation) == (name, "same", 1)
        renewed = await client.renew(lease, 60)
        assert renewed.generation == 1
        page = await client.list_leases(prefix=f"{path}-lease:", limit=5)
        assert [found.name for found in page.items] == [name]
        released = await client.release(renewed)
        assert released.name == name
        assert (await client.get_lease(name)).held is False
        spec = JobSpec(schedule="* * * * *", timezone="UTC")
        await client.put_job(f"{path}-job", spec)
        await client.delete_job(f"{path}-job")  # 204 No Content
        with pytest.raises(JobNotFound):
            await client.get_job(f"{path}-job")


async def test_problems_are_the_same_errors_on_both_paths(service_url: str) -> None:
    """A lease held by another holder, a renewal of a lease never held, an unknown lease, an
    unknown job and an invalid name raise the same errors, carrying the same details, on both
    paths."""
    async with AsyncTenure(service_url, holder="other") as other:
        await other.acquire("held", 30)
    held = await raised_alike(service_url, lambda client: client.acquire("held", 30))
    assert isinstance(held, LeaseHeld)
    assert held.holder == "other"
    lost = await raised_alike(service_url, lambda client: client.renew("nowhere", 30, 1))
    assert isinstance(lost, LeaseLost)
    assert lost.generation == 1
    missing = await raised_alike(service_url, lambda client: client.get_lease("nowhere"))
    assert isinstance(missing, LeaseNotFound)
    job = await raised_alike(service_url, lambda client: client.delete_job("no-such-job"))
    assert isinstance(job, JobNotFound)
    invalid = await raised_alike(service_url, lambda client: client.acquire("no spaces", 30))
    assert isinstance(invalid, InvalidRequest)


async def test_a_silent_service_times_out_alike(proxy: Proxy) -> None:
    """A service that never answers is given up on after the client's timeout, with the same
    TransportError on both paths."""
    proxy.blackhole()
    for path in PATHS:
        started = asyncio.get_running_loop().time()
        error = await raised(path, proxy.url, lambda client: client.get_lease("x"), timeout=0.3)
        assert isinstance(error, TransportError)
        assert 0.3 <= asyncio.get_running_loop().time() - started < 2
    await raised_alike(proxy.url, lambda client: client.get_lease("x"), timeout=0.3)


async def test_a_refused_connection_is_the_same_transport_error(dead_url: str) -> None:
    """With nothing listening, both paths raise the same TransportError."""
    error = await raised_alike(dead_url, lambda client: client.get_lease("x"))
    assert isinstance(error, TransportError)


async def test_a_dropped_connection_is_the_same_transport_error(dropping_server: str) -> None:
    """A server closing the connection instead of answering: the same TransportError."""
    error = await raised_alike(dropping_server, lambda client: client.get_lease("x"))
    assert isinstance(error, TransportError)


async def test_connections_go_back_to_the_pool(proxy: Proxy) -> None:
    """Requests one after another, problems among them, reuse one connection."""
    async with client_on("direct", proxy.url) as client:
        for _ in range(5):
            name = next(names)
            await client.release(await client.acquire(name, 30))
            with pytest.raises(LeaseLost):
                await client.renew(name, 30, 99)
    assert proxy.connections == 1


async def test_requests_go_through_the_environments_proxy(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With HTTP_PROXY set, the direct path asks the proxy for the service's URL: here a host
    that does not resolve, answered only through the proxy (in front of the service)."""
    for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    async with client_on("direct", "http://tenure.invalid") as client:
        await client.release(await client.acquire("proxied", 30))
    assert b"POST http://tenure.invalid/v1/leases/proxied/acquire " in proxy.received
