"""`Tenure`'s default transport: reqwest's connection pool (Rust, through pyreqwest) behind
httpx's transport API, imported only when a `Tenure` is made without a transport of its own.

pyreqwest maintains the adapter (`pyreqwest.compatibility.httpx`); what this module adds is the
pool's configuration and one correction: the adapter turns httpx's four timeouts (connect, read,
write, pool) into reqwest's one deadline for the whole request by adding them up, which would
make each request's deadline four times the client's `timeout`.
"""

from __future__ import annotations

import httpx
from pyreqwest.client import SyncClientBuilder
from pyreqwest.compatibility.httpx import SyncHttpxTransport
from pyreqwest.proxy import ProxyBuilder

__all__ = ["ReqwestTransport", "reqwest_transport"]


class ReqwestTransport(SyncHttpxTransport):
    """pyreqwest's httpx transport, each request's timeout its one deadline."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            longest = max((value for value in timeouts.values() if value is not None), default=None)
            # The adapter adds the values up: one value is the whole request's deadline.
            request.extensions = {**request.extensions, "timeout": {"read": longest}}
        return super().handle_request(request)


def reqwest_transport(max_connections: int, proxy: httpx.Proxy | None) -> ReqwestTransport:
    """At most `max_connections` requests in flight, every connection kept open between
    requests (reqwest's pool does not poll its idle connections on each request, as httpcore's
    does), through `proxy` or none: never one reqwest would find by itself, so that both
    clients follow `environment_proxy`."""
    builder = SyncClientBuilder().max_connections(max_connections).no_proxy()
    if proxy is not None:
        route = ProxyBuilder.all(str(proxy.url))
        if proxy.auth is not None:  # httpx takes the credentials out of the proxy's URL
            route = route.basic_auth(*proxy.auth)
        builder = builder.proxy(route)
    return ReqwestTransport(builder.build())
