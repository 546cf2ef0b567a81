"""The client: its I/O (send, retry, wait) and one method per operation of the API.

    with Tenure("http://127.0.0.1:8080") as client:
        lease = client.acquire("close-day", ttl=90)
        client.release(lease)

What does not touch the network is in `tenure._client` (configuration, holder) and
`tenure._protocol` (requests and answers).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from tenure import _protocol as P
from tenure._async.events import follow
from tenure._async.lease import AsyncLeaseHandle
from tenure._async.renewer import AsyncRenewer
from tenure._async.sender import AsyncHttpxSender
from tenure._client import (
    ClientBase,
    async_transport,
    ca_bundle,
    holdings,
    url_and_token,
    warn_clock_ignored,
)
from tenure._concurrency import asleep
from tenure._config import (
    DEFAULT_EARLY_TOLERANCE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_WAIT_PER_REQUEST,
    DEFAULT_TIMEOUT,
)
from tenure._errors import LeaseHeld, TenureError
from tenure._events import DEFAULT_IDLE_TIMEOUT, DEFAULT_STREAM_RETRY, StreamEvent
from tenure._lease import LostCallback
from tenure._models import (
    Fence,
    Job,
    JobSpec,
    Lease,
    Overview,
    Page,
    Renewals,
    Verifications,
    Window,
)
from tenure._retry import DEFAULT_RETRY, RetryPolicy, retry_delay
from tenure._tls import Verify
from tenure.schedule import KeyFormat

__all__ = ["AsyncTenure"]

T = TypeVar("T")
Holding = P.Holding
Granted = P.Granted


class AsyncTenure(ClientBase):
    """A client of the service: `Tenure` blocks and is thread-safe, `AsyncTenure` has the same
    operations, awaited. Close it (or use it as a context manager) to free its connections.

    Requests go through an httpx client over `transport`, by default a connection pool of at
    most `max_connections` connections kept open between requests (aiohttp's for `AsyncTenure`,
    through httpx-aiohttp; reqwest's for `Tenure`, through pyreqwest). Over https it trusts the
    CAs `verify` names, as httpx's `verify=` does: by default $SSL_CERT_FILE's, else
    $SSL_CERT_DIR's, else certifi's; a CA bundle's path; an `ssl.SSLContext` (with a client
    certificate loaded, for mutual TLS); False: none verified (`tenure._tls`)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        holder: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        max_wait_per_request: float = DEFAULT_MAX_WAIT_PER_REQUEST,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        verify: Verify = True,
    ) -> None:
        super().__init__(
            base_url,
            token=token,
            holder=holder,
            timeout=timeout,
            retry=retry,
            max_wait_per_request=max_wait_per_request,
        )
        self._transport, self._streams, direct = async_transport(
            transport, self.base_url, max_connections, verify
        )
        # The event stream goes through httpx's client; requests straight to the transport, or
        # through its pool without httpx's request and response where it can (`direct`).
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self.headers, timeout=timeout, transport=self._streams
        )
        self._sender = (
            AsyncHttpxSender(self._transport, self._http) if direct is None else direct(self._http)
        )
        self._renewer = AsyncRenewer(self)

    @classmethod
    def from_env(
        cls,
        base_url: str | None = None,
        *,
        token: str | None = None,
        verify: Verify | None = None,
        **options: Any,
    ) -> Self:
        """A client for `base_url`, else `$TENURE_URL`, else `DEFAULT_URL`, with `token`, else
        `$TENURE_TOKEN` (sent as `Authorization: Bearer …`), trusting the CAs `verify` names,
        else the CA bundle `$TENURE_CA_BUNDLE` names, else httpx's default ones. Other options
        as for the class."""
        url, found = url_and_token(base_url, token)
        return cls(url, token=found, verify=ca_bundle(verify), **options)

    # I/O --------------------------------------------------------------------------------------

    async def _call(
        self,
        request: P.Request[T],
        *,
        retry: RetryPolicy | None = None,
        http_timeout: float | None = None,
    ) -> T:
        answer, _ = await self._exchange(request, retry=retry, http_timeout=http_timeout)
        return answer

    async def _exchange(
        self,
        request: P.Request[T],
        *,
        retry: RetryPolicy | None = None,
        http_timeout: float | None = None,
    ) -> tuple[T, float]:
        """The decoded answer, and the monotonic time its request was sent (retries included:
        the try that was answered)."""
        policy = self.retry if retry is None else retry
        for failures in itertools.count(1):
            sent_at = time.monotonic()
            try:
                answer = await self._send(
                    request, self.timeout if http_timeout is None else http_timeout
                )
            except TenureError as error:
                delay = retry_delay(policy, failures, error)
                if delay is None:
                    raise
            else:
                return answer, sent_at
            await asleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, request: P.Request[T], http_timeout: float) -> T:
        return await self._sender.send(request, http_timeout + request.wait)

    async def aclose(self) -> None:
        """Free the client's connections."""
        await self._http.aclose()  # and the stream's transport
        if self._transport is not self._streams:
            await self._transport.aclose()

    close = aclose

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # Leases -----------------------------------------------------------------------------------

    async def acquire(self, name: str, ttl: float, *, wait: float = 0.0) -> Lease:
        """Take lease `name` for `ttl` seconds, or extend it if this client holds it already (same
        generation). With `wait`, keep asking for up to that many seconds: the service answers
        as soon as the lease is free. Raises `LeaseHeld` when it is still held."""
        lease, _ = await self._acquire(name, ttl, wait)
        return lease

    async def _acquire(self, name: str, ttl: float, wait: float) -> tuple[Lease, float]:
        plan = self._wait_plan(wait)
        while True:
            sent_at = time.monotonic()
            asked = plan.chunk(sent_at)
            try:
                return await self._exchange(P.acquire(name, self.holder, ttl, asked))
            except LeaseHeld:
                pause = plan.pause_after_held(sent_at, asked, time.monotonic())
                if pause is None:
                    raise
            await asleep(pause)

    async def renew(self, lease: Holding | str, ttl: float, generation: int | None = None) -> Lease:
        """Extend this client's holding for another `ttl` seconds; `LeaseLost` if it is gone."""
        name, number = P.holding_of(lease, generation)
        return await self._call(P.renew(name, self.holder, number, ttl))

    async def renew_many(self, leases: Iterable[Holding | tuple[str, int]], ttl: float) -> Renewals:
        """Extend many of this client's holdings in one request (one statement on the service):
        the cheap way for a process holding many leases. Each is renewed or reported lost
        exactly as `renew` would; at most the service's `TENURE_MAX_BATCH_SIZE` per call."""
        return await self._call(P.renew_many(self.holder, holdings(leases), ttl))

    async def release(
        self, lease: Granted | str, generation: int | None = None, *, grant: str | None = None
    ) -> Lease:
        """End this client's holding now. Releasing again is answered with the same lease.

        The release names the grant of the latest acquire or renew: give that answer (or a
        lease handle), or a name with `generation` and `grant`. A release naming an older grant
        ends nothing (`LeaseLost`): this holder was granted the lease again since."""
        name, number, granted = P.grant_of(lease, generation, grant)
        return await self._call(P.release(name, self.holder, number, granted))

    async def get_lease(self, name: str) -> Lease:
        return await self._call(P.get_lease(name))

    async def list_leases(
        self, *, prefix: str = "", limit: int | None = None, cursor: str | None = None
    ) -> Page[Lease]:
        return await self._call(P.list_leases(prefix, limit, cursor))

    def lease(
        self,
        name: str,
        ttl: float,
        *,
        wait: float = 0.0,
        renew_every: float | None = None,
        on_lost: LostCallback | None = None,
    ) -> AsyncLeaseHandle:
        """A handle for a `with` block (`async with` for `AsyncTenure`): acquires, renews in the
        background, releases on exit. On loss the async block's task is cancelled and
        `LeaseLost` raised out of the block; a sync block checks (`lease.check()`)."""
        return AsyncLeaseHandle(
            self, name, ttl, wait=wait, renew_every=renew_every, on_lost=on_lost
        )

    # Windows and fences -----------------------------------------------------------------------

    async def claim_window(
        self, job: str, window: str, lease: Holding | str, generation: int | None = None
    ) -> Window:
        """Start (or resume: attempt + 1) one occurrence of `job` under a held lease.
        `WindowCompleted` when it already ran to completion: skip it."""
        name, number = P.holding_of(lease, generation)
        return await self._call(P.claim_window(job, window, name, self.holder, number))

    async def complete_window(
        self, job: str, window: str, lease: Holding | str, generation: int | None = None
    ) -> Window:
        name, number = P.holding_of(lease, generation)
        return await self._call(P.complete_window(job, window, name, self.holder, number))

    async def get_window(self, job: str, window: str) -> Window:
        return await self._call(P.get_window(job, window))

    async def resolve_window(
        self,
        cron: str,
        tz: str,
        key: KeyFormat = "occurrence",
        *,
        early_tolerance: float = DEFAULT_EARLY_TOLERANCE,
        clock: Callable[[], datetime] | None = None,
    ) -> str:
        """The window key of the occurrence of `cron` in zone `tz` a scheduler firing now meant,
        by the service's (the database's) clock: its latest occurrence, or the next one when
        that is due within `early_tolerance` seconds (at most the service's
        TENURE_MAX_EARLY_TOLERANCE_SECONDS). This host's clock decides nothing; when it is off
        the service's by more than `early_tolerance`, the client logs a warning, once.
        `clock` is deprecated and ignored."""
        if clock is not None:
            warn_clock_ignored()
        sent = datetime.now(UTC)
        resolution = await self._call(P.resolve_window(cron, tz, key, early_tolerance))
        self._compare_clocks(sent, datetime.now(UTC), resolution.now, early_tolerance)
        return resolution.window

    async def list_windows(
        self, job: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Window]:
        return await self._call(P.list_windows(job, limit, cursor))

    async def verify_fence(
        self, resource: str, lease: Holding | str, generation: int | None = None
    ) -> Fence:
        """Record that `resource` accepts this generation; `StaleGeneration` if it saw higher."""
        name, number = P.holding_of(lease, generation)
        return await self._call(P.verify_fence(resource, name, number))

    async def verify_fences(
        self, resources: Iterable[str], lease: Holding | str, generation: int | None = None
    ) -> Verifications:
        """`verify_fence` on many resources in one request: each accepted, or refused with the
        error a single verify would raise (`Verifications.refused`); raises only for the whole
        request (each resource may appear once, at most the service's batch size)."""
        name, number = P.holding_of(lease, generation)
        return await self._call(P.verify_fences(list(resources), name, number))

    # Jobs and the overview --------------------------------------------------------------------

    async def put_job(self, job: str, spec: JobSpec) -> Job:
        """Register `job`, or update its definition (an identical PUT changes nothing). The
        service then reports its status and alerts when a window misses its deadline."""
        return await self._call(P.put_job(job, spec))

    async def register_job(self, job: str, spec: JobSpec) -> None:
        """`put_job`, once per client and definition: what `run_once(register=...)` calls."""
        if self._needs_registration(job, spec):
            await self.put_job(job, spec)
            self._registered_job(job, spec)

    async def get_job(self, job: str) -> Job:
        return await self._call(P.get_job(job))

    async def delete_job(self, job: str) -> None:
        """Stop monitoring `job`; `JobNotFound` if it is not registered."""
        await self._call(P.delete_job(job))

    async def list_jobs(
        self, *, prefix: str = "", limit: int | None = None, cursor: str | None = None
    ) -> Page[Job]:
        return await self._call(P.list_jobs(prefix, limit, cursor))

    async def overview(self) -> Overview:
        """Jobs with their status, leases with their age, open alerts and notable events."""
        return await self._call(P.get_overview())

    def events(
        self,
        *,
        namespace: str | None = None,
        last_event_id: str | None = None,
        retry: RetryPolicy = DEFAULT_STREAM_RETRY,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> AsyncIterator[StreamEvent]:
        """The live events (lease grants, takeovers, releases and losses, window claims and
        completions, alerts) whose name starts with `namespace`, after `last_event_id` if given,
        until the caller stops reading. Reconnects by itself, resuming after the last event seen.
        Yields `stream.connected` when a connection opens (state read after it misses nothing)
        and `stream.reset` when events were missed (read the state again, e.g. `overview()`)."""
        return follow(
            self._http,
            namespace=namespace,
            last_event_id=last_event_id,
            retry=retry,
            timeouts=httpx.Timeout(self.timeout, read=idle_timeout),
        )
