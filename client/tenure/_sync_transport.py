"""`Tenure`'s default transport: reqwest's connection pool (Rust, through pyreqwest) behind
httpx's transport API, imported only when a `Tenure` is made without a transport of its own.

pyreqwest maintains the adapter (`pyreqwest.compatibility.httpx`); what this module adds is the
pool's configuration and four corrections:

- The adapter turns httpx's four timeouts (connect, read, write, pool) into reqwest's one
  deadline for the whole request by adding them up, which would make each request's deadline
  four times the client's `timeout`: the longest of them is the deadline.
- reqwest's runtime (Tokio's threads) does not survive `fork()`: a forked child's request on the
  parent's pool would hang past every timeout, and pyreqwest refuses to start a runtime there.
  A child forked after this process started one sends through httpx's own pool instead (as a
  `Tenure` did before), so a client made before a fork (multiprocessing's default on Linux, a
  pre-forking server) keeps working in the children.
- reqwest has no read timeout per request, only that one deadline, which would end an event
  stream that lasts longer than its idle timeout (the longest silence taken, per read): the
  stream goes through httpx's own pool (`httpcore_pool`), as before.
- reqwest verifies certificates with rustls, which trusts other CAs than httpx by default
  (`reqwest_verification`): where it cannot trust exactly the ones `verify=` names
  (`tenure._tls`), the requests go through httpx's own pool.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
from dataclasses import dataclass

import httpx
from pyreqwest.client import SyncClient, SyncClientBuilder
from pyreqwest.compatibility.httpx import SyncHttpxTransport
from pyreqwest.proxy import ProxyBuilder

from tenure._tls import Verify, ssl_context

__all__ = [
    "HTTPCORE_KEPT_CONNECTIONS",
    "SyncTransport",
    "Trust",
    "explained",
    "httpcore_pool",
    "reqwest_verification",
]

# httpcore's pool checks every idle connection on each request: measured with 64 threads, 20
# kept open cost 0.6 ms of CPU per request, 64 kept 1.7-2.2 ms.
HTTPCORE_KEPT_CONNECTIONS = 20


def httpcore_pool(
    max_connections: int, proxy: httpx.Proxy | None, context: ssl.SSLContext
) -> httpx.HTTPTransport:
    """httpx's own pool: at most `max_connections`, HTTPCORE_KEPT_CONNECTIONS of them kept."""
    kept = min(max_connections, HTTPCORE_KEPT_CONNECTIONS)
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=kept)
    return httpx.HTTPTransport(verify=context, limits=limits, proxy=proxy)


def reqwest_verification(verify: Verify, base_url: str, proxy: httpx.Proxy | None) -> bool | None:
    """How reqwest's pool trusts exactly the CAs `ssl_context(verify)` does: with its default
    roots (True), verifying nothing (False), or None where it cannot.

    reqwest's default roots (rustls-platform-verifier) are, on Linux, $SSL_CERT_FILE's and
    $SSL_CERT_DIR's when either is set, else the system's store (httpx: certifi's bundle), and
    elsewhere the system's own verifier; roots given to its builder are trusted on top of those,
    and pyreqwest 0.15 cannot drop them. So it trusts what httpx does without TLS (neither the
    service nor the proxy is https), with nothing verified, or with $SSL_CERT_FILE alone naming
    the CAs on Linux (with $SSL_CERT_DIR too, httpx reads only the file, reqwest both)."""
    if httpx.URL(base_url).scheme != "https" and (proxy is None or proxy.url.scheme != "https"):
        return True
    if verify is False:
        return False
    named_by_file = bool(os.environ.get("SSL_CERT_FILE")) and not os.environ.get("SSL_CERT_DIR")
    if verify is True and named_by_file and sys.platform == "linux":
        return True
    return None


@dataclass(frozen=True)
class Trust:
    """What a `Tenure` trusts: `context` for httpx's pools, and how reqwest's pool verifies to
    trust the same (`reqwest_verification`; None: httpx's own pool sends the requests)."""

    context: ssl.SSLContext
    reqwest: bool | None

    @classmethod
    def of(cls, verify: Verify, base_url: str, proxy: httpx.Proxy | None) -> Trust:
        return cls(ssl_context(verify), reqwest_verification(verify, base_url, proxy))


class _Runtime:
    """Whether this process may use pyreqwest: not in a child forked after a runtime started."""

    started = False
    forked = False

    @classmethod
    def after_fork(cls) -> None:
        cls.forked = cls.forked or cls.started


os.register_at_fork(after_in_child=_Runtime.after_fork)


class _ReqwestTransport(SyncHttpxTransport):
    """pyreqwest's httpx transport over `client`, each request's timeout its one deadline, and
    each error saying its cause."""

    def __init__(self, client: SyncClient) -> None:
        super().__init__(client)
        self.client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            longest = max((value for value in timeouts.values() if value is not None), default=None)
            # The adapter adds the values up: one value is the whole request's deadline.
            request.extensions = {**request.extensions, "timeout": {"read": longest}}
        try:
            return super().handle_request(request)
        except httpx.TransportError as error:
            raise explained(error) from error


def explained(error: httpx.TransportError) -> httpx.TransportError:
    """`error` (as pyreqwest's httpx adapter maps pyreqwest's) saying what pyreqwest says caused
    it: the adapter keeps only its summary ("connection error"), which hides why (an untrusted
    certificate: "invalid peer certificate: UnknownIssuer")."""
    details = getattr(error.__cause__, "details", None)
    causes = details.get("causes") if isinstance(details, dict) else None
    cause = f": {causes[-1]['message']}" if causes else ""
    return type(error)(f"{error}{cause}", request=error.request)


def _reqwest(max_connections: int, proxy: httpx.Proxy | None, verifies: bool) -> SyncClient:
    """At most `max_connections` requests in flight, every connection kept open (reqwest's pool
    does not poll its idle connections on each request, as httpcore's does), through `proxy` or
    none: never one reqwest would find by itself, so that both clients follow
    `environment_proxy`; certificates verified with reqwest's default roots, or not at all."""
    builder = SyncClientBuilder().max_connections(max_connections).no_proxy()
    builder = builder.danger_accept_invalid_certs(not verifies)
    if proxy is not None:
        route = ProxyBuilder.all(str(proxy.url))
        if proxy.auth is not None:  # httpx takes the credentials out of the proxy's URL
            route = route.basic_auth(*proxy.auth)
        builder = builder.proxy(route)
    _Runtime.started = True
    return builder.build()


class SyncTransport(httpx.BaseTransport):
    """reqwest's pool in the process that made it, if that process may use pyreqwest and reqwest
    can trust what `trust` says; else, and in a child forked from it, httpx's own
    (HTTPCORE_KEPT_CONNECTIONS kept open)."""

    def __init__(self, max_connections: int, proxy: httpx.Proxy | None, trust: Trust) -> None:
        self._max_connections = max_connections
        self._proxy = proxy
        self._context = trust.context
        self._pid = os.getpid()
        self._reqwest = None
        if not _Runtime.forked and trust.reqwest is not None:
            self._reqwest = _ReqwestTransport(_reqwest(max_connections, proxy, trust.reqwest))
        self._httpcore: httpx.HTTPTransport | None = None
        self._lock = threading.Lock()

    def _reqwest_here(self) -> _ReqwestTransport | None:
        return self._reqwest if os.getpid() == self._pid else None

    def reqwest(self) -> SyncClient | None:
        """reqwest's pool, if this process sends through it; else None."""
        here = self._reqwest_here()
        return None if here is None else here.client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        here = self._reqwest_here()
        if here is not None:
            return here.handle_request(request)
        return self._fallback().handle_request(request)

    def _fallback(self) -> httpx.HTTPTransport:
        with self._lock:
            if self._httpcore is None:
                self._httpcore = httpcore_pool(self._max_connections, self._proxy, self._context)
            return self._httpcore

    def close(self) -> None:
        if self._reqwest is not None and os.getpid() == self._pid:
            self._reqwest.close()  # a forked child leaves the parent's pool alone
        if self._httpcore is not None:
            self._httpcore.close()
