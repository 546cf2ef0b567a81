"""`AsyncTenure` and `Tenure` send their requests straight through their default pools
(aiohttp's session, `tenure._aiohttp_sender`; reqwest's client, `tenure._reqwest_sender`), and
through httpx's transport API when given a transport of their own: both paths answer alike — the
same values, the same errors for problems, 204s, timeouts, refused and dropped connections —
keep their connections open, and follow the environment's proxy (issue 29). The httpx path here
is the same kind of pool given as `transport=`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable
from operator import methodcaller
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
    Tenure,
    TenureError,
    TransportError,
)
from tenure._aiohttp_sender import AiohttpSender
from tenure._config import DEFAULT_MAX_CONNECTIONS
from tenure._reqwest_sender import ReqwestSender
from tenure._sync_transport import SyncTransport, Trust
from tests.support.live_service import Proxy

CLIENTS = ["async", "sync"]
PATHS = ["direct", "httpx"]
names = (f"direct-{n}" for n in itertools.count())
Client = AsyncTenure | Tenure
# One operation on either client: a coroutine of AsyncTenure's, or Tenure's answer itself.
Call = Callable[[Any], Any]


def client_on(flavor: str, path: str, url: str, **options: Any) -> Client:
    """An `AsyncTenure` ("async") or `Tenure` ("sync") of `url` whose requests take `path`."""
    client: Client
    if flavor == "async":
        pool = AiohttpTransport() if path == "httpx" else None
        client = AsyncTenure(url, retry=NO_RETRY, transport=pool, **options)
        assert isinstance(client._sender, AiohttpSender) is (path == "direct")
    else:
        trust = Trust.of(True, url, None)
        transport = SyncTransport(DEFAULT_MAX_CONNECTIONS, None, trust) if path == "httpx" else None
        client = Tenure(url, retry=NO_RETRY, transport=transport, **options)
        assert isinstance(client._sender, ReqwestSender) is (path == "direct")
    return client


async def run(client: Client, call: Call) -> Any:
    """`call` on `client`: awaited, or in a thread, the event loop free for the test's server."""
    if isinstance(client, AsyncTenure):
        return await call(client)
    return await asyncio.to_thread(call, client)


@contextlib.asynccontextmanager
async def opened(flavor: str, path: str, url: str, **options: Any) -> AsyncIterator[Client]:
    client = client_on(flavor, path, url, **options)
    try:
        yield client
    finally:
        await run(client, lambda client: client.close())


async def raised(flavor: str, path: str, url: str, call: Call, **options: Any) -> TenureError:
    """What `call` raises on a client of `url` whose requests take `path`."""
    async with opened(flavor, path, url, **options) as client:
        with pytest.raises(TenureError) as caught:
            await run(client, call)
    return caught.value


async def raised_alike(flavor: str, url: str, call: Call, **options: Any) -> TenureError:
    """What `call` raises on either path, once it is seen to be the same error on both."""
    direct, through_httpx = [await raised(flavor, path, url, call, **options) for path in PATHS]
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
@pytest.mark.parametrize("flavor", CLIENTS)
async def test_both_paths_answer_operations_alike(flavor: str, path: str, service_url: str) -> None:
    """Acquire, renew, a listing with a query, release and a 204 answer the same on both paths."""
    name, job = f"{flavor}-{path}-lease:one.x", f"{flavor}-{path}-job"
    async with opened(flavor, path, service_url, holder="same") as client:
        lease = await run(client, lambda client: client.acquire(name, 30))
        assert (lease.name, lease.holder, lease.generation) == (name, "same", 1)
        renewed = await run(client, lambda client: client.renew(lease, 60))
        assert renewed.generation == 1
        page = await run(client, lambda client: client.list_leases(prefix=name[:-2], limit=5))
        assert [found.name for found in page.items] == [name]
        released = await run(client, lambda client: client.release(renewed))
        assert released.name == name
        assert (await run(client, lambda client: client.get_lease(name))).held is False
        spec = JobSpec(schedule="* * * * *", timezone="UTC")
        await run(client, lambda client: client.put_job(job, spec))
        await run(client, lambda client: client.delete_job(job))  # 204 No Content
        with pytest.raises(JobNotFound):
            await run(client, lambda client: client.get_job(job))


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_problems_are_the_same_errors_on_both_paths(flavor: str, service_url: str) -> None:
    """A lease held by another holder, a renewal of a lease never held, an unknown lease, an
    unknown job and an invalid name raise the same errors, carrying the same details, on both
    paths."""
    async with AsyncTenure(service_url, holder="other") as other:
        await other.acquire(f"held-{flavor}", 30)
    held = await raised_alike(flavor, service_url, lambda c: c.acquire(f"held-{flavor}", 30))
    assert isinstance(held, LeaseHeld)
    assert held.holder == "other"
    lost = await raised_alike(flavor, service_url, lambda client: client.renew("nowhere", 30, 1))
    assert isinstance(lost, LeaseLost)
    assert lost.generation == 1
    missing = await raised_alike(flavor, service_url, lambda client: client.get_lease("nowhere"))
    assert isinstance(missing, LeaseNotFound)
    job = await raised_alike(flavor, service_url, lambda client: client.delete_job("no-such-job"))
    assert isinstance(job, JobNotFound)
    invalid = await raised_alike(flavor, service_url, lambda c: c.acquire("no spaces", 30))
    assert isinstance(invalid, InvalidRequest)


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_a_silent_service_times_out_alike(flavor: str, proxy: Proxy) -> None:
    """A service that never answers is given up on after the client's timeout, with the same
    TransportError on both paths."""
    proxy.blackhole()
    for path in PATHS:
        started = asyncio.get_running_loop().time()
        error = await raised(flavor, path, proxy.url, methodcaller("get_lease", "x"), timeout=0.3)
        assert isinstance(error, TransportError)
        assert 0.3 <= asyncio.get_running_loop().time() - started < 2
    await raised_alike(flavor, proxy.url, lambda client: client.get_lease("x"), timeout=0.3)


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_a_refused_connection_is_the_same_transport_error(flavor: str, dead_url: str) -> None:
    """With nothing listening, both paths raise the same TransportError."""
    error = await raised_alike(flavor, dead_url, lambda client: client.get_lease("x"))
    assert isinstance(error, TransportError)


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_a_dropped_connection_is_the_same_transport_error(
    flavor: str, dropping_server: str
) -> None:
    """A server closing the connection instead of answering: the same TransportError."""
    error = await raised_alike(flavor, dropping_server, lambda client: client.get_lease("x"))
    assert isinstance(error, TransportError)


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_connections_go_back_to_the_pool(flavor: str, proxy: Proxy) -> None:
    """Requests one after another, problems among them, reuse one connection."""
    async with opened(flavor, "direct", proxy.url) as client:
        for _ in range(5):
            name = next(names)
            lease = await run(client, methodcaller("acquire", name, 30))
            await run(client, methodcaller("release", lease))
            with pytest.raises(LeaseLost):
                await run(client, methodcaller("renew", name, 30, 99))
    assert proxy.connections == 1


@pytest.mark.parametrize("flavor", CLIENTS)
async def test_requests_go_through_the_environments_proxy(
    flavor: str, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With HTTP_PROXY set, the direct path asks the proxy for the service's URL: here a host
    that does not resolve, answered only through the proxy (in front of the service)."""
    for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    name = f"proxied-{flavor}"
    async with opened(flavor, "direct", "http://tenure.invalid") as client:
        lease = await run(client, lambda client: client.acquire(name, 30))
        await run(client, lambda client: client.release(lease))
    assert f"POST http://tenure.invalid/v1/leases/{name}/acquire ".encode() in proxy.received
