"""`AsyncTenure`'s requests sent straight through the aiohttp session of its default transport
(httpx-aiohttp's `AiohttpTransport`), imported only with that transport.

Through the transport, each request was built as an `httpx.Request`, converted into aiohttp's,
and each answer converted back into an `httpx.Response` and read through it: over a third of
the client's CPU per request (bench/README.md). Sent here, a request is the method, URL,
headers and body bytes `RequestBuilder` makes for both paths, and the answer is status, headers
and body bytes for `_protocol.decode_response`, as before. What the transport decides stays its
own: the session (its connection pool, the TLS context `verify` gave it) and the proxy; the
timeouts and the errors are the transport's too (`httpx_aiohttp.transport`), so the client
behaves alike on both paths. A caller's own `transport=` is sent to through httpx's API.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import httpx
from aiohttp import BasicAuth, ClientSession, ClientTimeout
from httpx_aiohttp import AiohttpTransport
from httpx_aiohttp.transport import map_aiohttp_exceptions
from multidict import CIMultiDict

from tenure import _protocol as P
from tenure._client import RequestBuilder, transport_error

__all__ = ["AiohttpSender"]

T = TypeVar("T")


@functools.lru_cache(maxsize=64)
def _timeout(seconds: float) -> ClientTimeout:
    """What the transport makes of httpx's `Timeout(seconds)`: connecting, each read and the
    wait for a connection of the pool each limited, the whole request not."""
    return ClientTimeout(sock_connect=seconds, sock_read=seconds, connect=seconds)


def _proxy(proxy: httpx.Proxy | None) -> dict[str, Any]:
    """The transport's proxy as aiohttp's per-request arguments, as the transport passes it."""
    if proxy is None:
        return {}
    auth = BasicAuth(*proxy.auth) if proxy.auth else None
    return {"proxy": str(proxy.url), "proxy_auth": auth, "proxy_headers": proxy.headers}


class AiohttpSender:
    """Sends `AsyncTenure`'s requests through `transport`'s session; the client's `http` (the
    httpx client of its event stream) says the base URL and headers."""

    def __init__(self, transport: AiohttpTransport, http: httpx.AsyncClient) -> None:
        self._transport = transport
        self._requests = RequestBuilder(http, CIMultiDict[str], encodings=False)
        self._proxy = _proxy(transport.proxy)

    def _session(self) -> ClientSession:
        # The transport makes its session on its first request (it needs a running event loop)
        # and closes it on `aclose`; the first request of either path makes it for both.
        if not isinstance(self._transport.client, ClientSession):
            self._transport.client = self._transport.get_client()
        return self._transport.client

    async def send(self, request: P.Request[T], http_timeout: float) -> T:
        """The decoded answer to `request`, waiting at most `http_timeout` seconds for each
        step (connecting, each read, a connection of the pool)."""
        try:
            with map_aiohttp_exceptions():  # aiohttp's errors as the transport raises them
                async with self._session().request(
                    request.method,
                    self._requests.url(request),
                    headers=self._requests.headers(request),
                    data=self._requests.content(request),
                    allow_redirects=False,
                    timeout=_timeout(http_timeout),
                    **self._proxy,
                ) as response:  # leaving it puts the connection back in the pool, or closes it
                    content = await response.read()
        except httpx.TransportError as error:
            raise transport_error(error) from error
        return P.decode_response(request, response.status, response.headers, content)
