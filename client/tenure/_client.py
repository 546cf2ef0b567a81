"""What `Tenure` and `AsyncTenure` share, without I/O: where the service is, who this holder is,
the policies, the lease names held through handles, and the small steps around a request.

The clients themselves are written once: `AsyncTenure` in `tenure/_async/client.py`, and
`Tenure` generated from it into `tenure/_sync/client.py` by scripts/generate_sync.py. Both are thin
shells over `_protocol`: they send the request it builds, decode the answer with it, and sleep
between retries as `RetryPolicy` says.

Configuration is explicit: every argument has a named default (`DEFAULT_TIMEOUT`,
`DEFAULT_RETRY`, …). `from_env()` is the one place that reads `TENURE_URL`, `TENURE_TOKEN`
(`url_and_token`) and `TENURE_CA_BUNDLE` (`ca_bundle`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import threading
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import httpx

from tenure import _protocol as P
from tenure._config import DEFAULT_URL, ENV_CA_BUNDLE, ENV_TOKEN, ENV_URL, default_holder
from tenure._errors import TransportError
from tenure._models import JobSpec
from tenure._retry import RetryPolicy
from tenure._tls import Verify, ssl_context
from tenure._tracing import trace_headers

if TYPE_CHECKING:
    from multidict import CIMultiDict
    from pyreqwest.http import HeaderMap

__all__ = [
    "AsyncSender",
    "ClientBase",
    "RequestBuilder",
    "SyncSender",
    "async_transport",
    "ca_bundle",
    "clock_skew",
    "environment_proxy",
    "holdings",
    "sync_transport",
    "transport_error",
    "url_and_token",
    "warn_clock_ignored",
]

_log = logging.getLogger("tenure")
T = TypeVar("T")


class ClientBase:
    """The state both clients share; their I/O is in `tenure._async` / `tenure._sync`."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        holder: str | None,
        timeout: float,
        retry: RetryPolicy,
        max_wait_per_request: float,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8080")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError("timeout must be a positive number of seconds")
        if not (math.isfinite(max_wait_per_request) and max_wait_per_request > 0):
            raise ValueError("max_wait_per_request must be a positive number of seconds")
        self.base_url = base_url.rstrip("/")
        self.holder = default_holder() if holder is None else holder
        if not 1 <= len(self.holder) <= 200 or not self.holder.isprintable():
            raise ValueError("holder must be 1–200 printable characters")
        self.timeout = timeout
        self.retry = retry
        self.max_wait_per_request = max_wait_per_request
        self.headers = {"Accept": "application/json, application/problem+json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        # Lease names this client holds through a handle: the service cannot tell two handles
        # of one holder apart, so the client refuses the second one itself.
        self._active: set[str] = set()
        self._active_lock = threading.Lock()
        # Job definitions this client registered (register_job PUTs each once).
        self._registered: dict[str, JobSpec] = {}
        # Whether this client has said that this host's clock is off.
        self._clock_reported = False

    def _enter_name(self, name: str) -> bool:
        """Reserve `name` for one handle of this client; False when another handle has it."""
        with self._active_lock:
            if name in self._active:
                return False
            self._active.add(name)
            return True

    def _leave_name(self, name: str) -> None:
        with self._active_lock:
            self._active.discard(name)

    def _needs_registration(self, job: str, spec: JobSpec) -> bool:
        with self._active_lock:
            return self._registered.get(job) != spec

    def _registered_job(self, job: str, spec: JobSpec) -> None:
        with self._active_lock:
            self._registered[job] = spec

    def _compare_clocks(
        self, sent: datetime, received: datetime, service_now: datetime, tolerance: float
    ) -> None:
        """Log once (per client) when this host's clock is off the service's by more than
        `tolerance` seconds; the service read `service_now` between `sent` and `received`."""
        skew = clock_skew(sent, received, service_now, tolerance)
        with self._active_lock:
            if skew == 0 or self._clock_reported:
                return
            self._clock_reported = True
        if skew > 0:
            consequence = (
                "a scheduler firing by it fires before the occurrence it means is due, and the"
                " service resolves the one before (each window runs one occurrence late)"
            )
        else:
            consequence = f"a scheduler firing by it starts each run {-skew:.0f} s late"
        _log.warning(
            "this host's clock is %.1f s %s the service's (the database's), more than the early"
            " tolerance of %g s: %s. Windows are resolved by the service's clock; keep this"
            " host's clock synchronised (NTP).",
            abs(skew),
            "ahead of" if skew > 0 else "behind",
            tolerance,
            consequence,
        )

    def _wait_plan(self, wait: float) -> P.WaitPlan:
        if not (math.isfinite(wait) and wait >= 0):
            raise ValueError("wait must be a number of seconds >= 0")
        return P.WaitPlan(deadline=time.monotonic() + wait, max_chunk=self.max_wait_per_request)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, holder={self.holder!r})"


def _checked(max_connections: int) -> int:
    """`max_connections`, refused below 1."""
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    return max_connections


def environment_proxy(base_url: str) -> httpx.Proxy | None:
    """The proxy the environment names for `base_url` (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`,
    `NO_PROXY`), which httpx's clients use when not given a transport; None for none."""
    proxies = urllib.request.getproxies()
    url = httpx.URL(base_url)
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return httpx.Proxy(proxy if "://" in proxy else f"http://{proxy}")


class AsyncSender(Protocol):
    """Sends requests straight through a pool: no httpx request or response on the way."""

    async def send(self, request: P.Request[T], http_timeout: float) -> T: ...


class SyncSender(Protocol):
    """`AsyncSender`, blocking."""

    def send(self, request: P.Request[T], http_timeout: float) -> T: ...


def async_transport(
    transport: httpx.AsyncBaseTransport | None, base_url: str, max_connections: int, verify: Verify
) -> tuple[
    httpx.AsyncBaseTransport,
    httpx.AsyncBaseTransport,
    Callable[[httpx.AsyncClient], AsyncSender] | None,
]:
    """What `AsyncTenure` sends its requests through, its event stream, and what sends the
    requests straight through that pool (given the client's httpx client), if anything: the
    caller's `transport` for both, and nothing; else aiohttp's connection pool behind httpx's
    transport API (httpx-aiohttp), several times cheaper per request than httpx's own, through
    the environment's proxy if it names one for `base_url`, trusting the CAs `verify` names
    (`tenure._tls`), with the requests sent straight through its session
    (`tenure._aiohttp_sender`)."""
    if transport is not None:
        return transport, transport, None
    # Imported here, not at the top: aiohttp takes long to import and `import tenure` stays light.
    from httpx_aiohttp import AiohttpTransport

    from tenure._aiohttp_sender import AiohttpSender

    # Every connection kept open: before, 20 of 100 were, and more concurrent requests than
    # that closed and reopened connections all the time (tests/client/test_connections.py).
    kept = _checked(max_connections)
    limits = httpx.Limits(max_connections=kept, max_keepalive_connections=kept)
    pool = AiohttpTransport(
        verify=ssl_context(verify), limits=limits, proxy=environment_proxy(base_url)
    )
    return pool, pool, functools.partial(AiohttpSender, pool)


def sync_transport(
    transport: httpx.BaseTransport | None, base_url: str, max_connections: int, verify: Verify
) -> tuple[httpx.BaseTransport, httpx.BaseTransport, Callable[[httpx.Client], SyncSender] | None]:
    """What `Tenure` sends its requests through, its event stream, and what sends the requests
    straight through that pool (given the client's httpx client), if anything: the caller's
    `transport` for both, and nothing; else reqwest's connection pool behind httpx's transport
    API (pyreqwest) for the requests, about half the CPU per request of httpx's own under many
    threads (bench/README.md), sent straight through reqwest's client where the transport uses
    it (`tenure._reqwest_sender`), and httpx's own pool for the stream (tenure._sync_transport
    says why), through the environment's proxy if it names one for `base_url`, trusting the CAs
    `verify` names (`tenure._tls`; reqwest only where it can trust the same ones)."""
    if transport is not None:
        return transport, transport, None
    # Imported here, not at the top, as the async transport is: `import tenure` stays light.
    from tenure._reqwest_sender import ReqwestSender
    from tenure._sync_transport import SyncTransport, Trust, httpcore_pool

    proxy = environment_proxy(base_url)
    trust = Trust.of(verify, base_url, proxy)
    pool = SyncTransport(_checked(max_connections), proxy, trust)
    streams = httpcore_pool(max_connections, proxy, trust.context)
    return pool, streams, functools.partial(ReqwestSender, pool)


@functools.lru_cache(maxsize=64)
def _timeout_extension(seconds: float) -> dict[str, float | None]:
    return httpx.Timeout(seconds).as_dict()


# The headers of a request as the pool that sends it takes them: httpx's `Headers`, aiohttp's
# `CIMultiDict`, pyreqwest's `HeaderMap`; each made from a mapping, and copied from its own kind.
H = TypeVar("H", httpx.Headers, "CIMultiDict[str]", "HeaderMap")


class RequestBuilder(Generic[H]):
    """Each `_protocol.Request` as what a client sends, with what is the same for every request
    of the client worked out once: the URL's prefix, the client's headers (the token, httpx's
    defaults) in the kind the pool takes (`H`, made by `kind`); per request only the path and
    query, the JSON body and the trace headers (when tracing is on) are new. Without
    `encodings`, httpx's Accept-Encoding is left out: a pool sent to directly decodes the answer
    itself and asks for the encodings it can decode.

    `build` makes the `httpx.Request` a transport takes (`tenure._async.sender`): what
    `httpx.AsyncClient.request` would build, without merging the client's configuration into
    each request again. A pool sent to directly takes `url`, `headers` and `content`
    (`tenure._aiohttp_sender`, `tenure._reqwest_sender`)."""

    def __init__(
        self,
        http: httpx.Client | httpx.AsyncClient,
        kind: Callable[[Mapping[str, str]], H],
        *,
        encodings: bool = True,
    ) -> None:
        self._prefix = str(http.base_url).rstrip("/")  # the paths start with "/"
        self._kind: Callable[[Mapping[str, str]], H] = kind
        headers = httpx.Headers(http.headers)
        if not encodings:
            headers.pop("Accept-Encoding", None)
        # Made once: from a dict, each request would normalise and encode every header again.
        self._headers: H = kind(headers)
        self._json_headers: H = kind(headers)
        self._json_headers["Content-Type"] = "application/json"

    def url(self, request: P.Request[Any]) -> str:
        """The request's URL, its query encoded as httpx encodes `params=`."""
        if request.params:
            return f"{self._prefix}{request.path}?{urllib.parse.urlencode(request.params)}"
        return self._prefix + request.path

    def headers(self, request: P.Request[Any]) -> H:
        """The client's headers, the body's type if it has one, and the trace context's."""
        headers = self._headers if request.json is None else self._json_headers
        trace = trace_headers()
        if trace:
            headers = self._kind(headers)
            headers.update(trace)
        return headers

    @staticmethod
    def content(request: P.Request[Any]) -> bytes | None:
        """The JSON body as httpx encodes `json=`: compact, UTF-8, no NaN; None for none."""
        if request.json is None:
            return None
        return json.dumps(
            request.json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()

    def build(
        self: RequestBuilder[httpx.Headers], request: P.Request[Any], timeout: float
    ) -> httpx.Request:
        return httpx.Request(
            request.method,
            self.url(request),
            headers=self.headers(request),
            content=self.content(request),
            extensions={"timeout": _timeout_extension(timeout)},
        )


def clock_skew(
    sent: datetime, received: datetime, service_now: datetime, tolerance: float
) -> float:
    """Seconds this host's clock is at least ahead of (> 0) or behind (< 0) the service's, which
    read `service_now` while this host's clock went from `sent` to `received`; 0 when that
    is within `tolerance` seconds of the interval (the request's own time is no skew)."""
    ahead = (sent - service_now).total_seconds()
    behind = (service_now - received).total_seconds()
    if ahead > tolerance:
        return ahead
    if behind > tolerance:
        return -behind
    return 0.0


def warn_clock_ignored() -> None:
    """`clock=` of `resolve_window` and `once_per`: deprecated, since the service decides."""
    warnings.warn(
        "`clock` is deprecated and ignored: the service resolves the window, early tolerance"
        " included, by the database's clock",
        DeprecationWarning,
        stacklevel=3,  # the caller of resolve_window / once_per
    )


def url_and_token(base_url: str | None, token: str | None) -> tuple[str, str | None]:
    """`base_url`, else `$TENURE_URL`, else `DEFAULT_URL`; `token`, else `$TENURE_TOKEN`."""
    url = base_url or os.environ.get(ENV_URL) or DEFAULT_URL
    return url, token if token is not None else (os.environ.get(ENV_TOKEN) or None)


def ca_bundle(verify: Verify | None) -> Verify:
    """`verify`, else the CA bundle `$TENURE_CA_BUNDLE` names, else True (httpx's default)."""
    if verify is not None:
        return verify
    return os.environ.get(ENV_CA_BUNDLE) or True


def holdings(leases: Iterable[P.Holding | tuple[str, int]]) -> list[tuple[str, int]]:
    """(name, generation) pairs from handles, `Lease`s or pairs."""
    return [lease if isinstance(lease, tuple) else P.holding_of(lease, None) for lease in leases]


def transport_error(error: httpx.TransportError) -> TransportError:
    """A request that got no answer, as the client raises it."""
    return TransportError(f"{type(error).__name__}: {error}" if str(error) else repr(error))
