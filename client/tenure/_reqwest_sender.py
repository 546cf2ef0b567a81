"""`Tenure`'s requests sent straight through reqwest's pool (pyreqwest's client) of its default
transport (`tenure._sync_transport`), imported only with that transport.

Through the transport, each request was built as an `httpx.Request`, converted by pyreqwest's
httpx adapter, and each answer converted back into an `httpx.Response` and read through it:
about half the client's CPU per request (bench/README.md). Sent here, a request is the method,
URL, headers and body bytes `RequestBuilder` makes for both paths, with the transport's one
deadline, and the answer is status, headers and body bytes for `_protocol.decode_response`, as
before. Errors are the ones the transport raises (pyreqwest's adapter's mapping, `explained`).
Where the transport does not send through reqwest (a forked child, CAs reqwest cannot trust
alike), the requests go through httpx's transport API to it, as they did before.
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import TypeVar

import httpx
from pyreqwest.compatibility.httpx._internal import map_exception
from pyreqwest.exceptions import PyreqwestError
from pyreqwest.http import HeaderMap

from tenure import _protocol as P
from tenure._client import RequestBuilder, transport_error
from tenure._sync.sender import HttpxSender
from tenure._sync_transport import SyncTransport, explained

__all__ = ["ReqwestSender"]

T = TypeVar("T")


@functools.lru_cache(maxsize=64)
def _deadline(seconds: float) -> timedelta:
    """The whole request's deadline: what the transport makes of httpx's `Timeout(seconds)`."""
    return timedelta(seconds=seconds)


class ReqwestSender:
    """Sends `Tenure`'s requests through `transport`'s reqwest pool where it has one in this
    process, else through `transport` itself; the client's `http` (the httpx client of its
    event stream) says the base URL and headers."""

    def __init__(self, transport: SyncTransport, http: httpx.Client) -> None:
        self._transport = transport
        self._requests = RequestBuilder(http, HeaderMap, encodings=False)
        self._through_httpx = HttpxSender(transport, http)

    def send(self, request: P.Request[T], http_timeout: float) -> T:
        """The decoded answer to `request`, waiting at most `http_timeout` seconds for all of
        it."""
        reqwest = self._transport.reqwest()
        if reqwest is None:
            return self._through_httpx.send(request, http_timeout)
        builder = reqwest.request(request.method, self._requests.url(request))
        builder = builder.headers(self._requests.headers(request)).timeout(_deadline(http_timeout))
        body = self._requests.content(request)
        if body is not None:
            builder = builder.body_bytes(body)
        try:
            response = builder.build().send()  # the body read, the connection back in the pool
        except PyreqwestError as error:
            # The error as the transport raises it, carrying the request as httpx's.
            mapped = map_exception(
                error, httpx.Request(request.method, self._requests.url(request))
            )
            if mapped is None:
                raise
            if not isinstance(mapped, httpx.TransportError):  # decoding, redirects
                raise mapped from error
            mapped.__cause__ = error  # what `explained` reads
            raise transport_error(explained(mapped)) from error
        content = response.bytes().to_bytes()
        return P.decode_response(request, response.status, response.headers, content)
