# Generated from tenure/_async/sender.py by scripts/generate_sync.py: edit that one.
"""Requests sent through httpx's transport API: how a client sends through a transport the
caller gave it, and where its default pool is not sent to directly (`tenure._client`'s
`async_transport` and `sync_transport` say which)."""

from __future__ import annotations

from typing import TypeVar

import httpx

from tenure import _protocol as P
from tenure._client import RequestBuilder, transport_error

__all__ = ["HttpxSender"]

T = TypeVar("T")


class HttpxSender:
    """Hands each request, as an `httpx.Request`, straight to `transport`: httpx's client would
    add per request what the SDK does not use (cookies, redirects, auth flows, event hooks). The
    client's `http` (the httpx client of its event stream) says the base URL and headers."""

    def __init__(self, transport: httpx.BaseTransport, http: httpx.Client) -> None:
        self._transport = transport
        self._requests = RequestBuilder(http, httpx.Headers)

    def send(self, request: P.Request[T], http_timeout: float) -> T:
        """The decoded answer to `request`, waiting at most `http_timeout` seconds for each
        step (as httpx's `Timeout(http_timeout)` says)."""
        try:
            built = self._requests.build(request, http_timeout)
            response = self._transport.handle_request(built)
            try:
                response.read()
            finally:  # the connection goes back to the pool, or is closed, also on errors
                response.close()
        except httpx.TransportError as error:
            raise transport_error(error) from error
        return P.decode_response(request, response.status_code, response.headers, response.content)
