"""Lease handles: hold a lease for the length of a `with` / `async with` block.

    with client.lease("close-day", ttl=90) as lease:          # LeaseHeld if another holds it
        for store in stores:
            lease.check()                                      # LeaseLost once it is gone
            post(store, headers=lease.fencing_headers())

Entering acquires (with `wait=`, keeps asking until that many seconds have passed); the client's
renewal loop renews every `renew_every` seconds (a third of the TTL by default) — one thread
(sync) or task (async) per client, which renews all its handles due together in one batch
request (`_renewer`); leaving releases, even when the block raised.

When is the lease lost? When a renewal is answered `lease-lost`, or refused outright, or when no
renewal has succeeded for so long that the lease may have expired. The last is decided on the
local monotonic clock, never on wall-clock time: the lease is counted as valid until `sent + ttl`,
where `sent` is the moment the last successful acquire or renew request was *sent* — the service
set the expiry no earlier than that, so the local deadline never falls after the real one. (An
answer that arrives after that deadline does not revive the handle.) `lease.lost` turns true as
soon as the deadline passes, even if the renewer is stuck.

On loss the handle stops renewing and marks itself lost at once:
- async: the task running the `async with` block is cancelled, and `LeaseLost` is raised out of
  the block (a cancellation that came from elsewhere propagates unchanged);
- sync: the thread cannot be interrupted, so `lease.lost` turns true, `lease.wait_lost()` returns,
  `lease.check()` raises `LeaseLost`, and `on_lost(error)` is called from a thread of its own; the
  block must check between units of work. Leaving the block raises `LeaseLost` if it ended
  without an exception of its own.

The window of risk that remains: a process that is paused (GC, a throttled container, a
suspended VM, SIGSTOP) between its last check and its write does not run any of this — it wakes
up and writes with a lease that expired meanwhile. Only the resource can close that window: send
`lease.fencing_headers()` (or verify the generation in the same transaction as the write) so
that it refuses a generation lower than one it has already seen. See docs/client.md.

Here is what both handles share, and the part where a thread and a task differ (`_ThreadHandle`,
`_TaskHandle`); the handles themselves are written once, as `AsyncLeaseHandle` in
`tenure/_async/lease.py`, and `LeaseHandle` is generated from it (scripts/generate_sync.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypedDict

from tenure import _protocol as P
from tenure._errors import LeaseHeld, LeaseLost, TenureError
from tenure._models import Lease
from tenure._propagation import fencing_token
from tenure._renewal import LeaseClock, renewal_verdict
from tenure._retry import NO_RETRY, RetryPolicy
from tenure._tokens import fencing_headers, format_token
from tenure._tracing import current_context

if TYPE_CHECKING:
    from opentelemetry.context import Context

    from tenure._client import ClientBase

__all__ = ["LOCAL_POLL_SECONDS", "LostCallback"]

_log = logging.getLogger("tenure")

LostCallback = Callable[[LeaseLost], object]
# How often a handle looks again when another handle of the same client holds the name.
LOCAL_POLL_SECONDS = 0.05
# A release waits for its answer at most max(this, the TTL) seconds (and the client's timeout).
MIN_RELEASE_TIMEOUT = 1.0


class _CallOptions(TypedDict):
    retry: RetryPolicy
    http_timeout: float


class _Handle:
    """State and queries shared by the sync and async handles."""

    def __init__(
        self,
        client: ClientBase,
        name: str,
        ttl: float,
        *,
        wait: float,
        renew_every: float | None,
        on_lost: LostCallback | None,
    ) -> None:
        if not (math.isfinite(wait) and wait >= 0):
            raise ValueError("wait must be a number of seconds >= 0")
        self._config = client
        self.name = name
        self.ttl = ttl
        self.wait = wait
        self._clock = LeaseClock(ttl, renew_every)
        self._on_lost = on_lost
        self._lease: Lease | None = None
        self._grant: str | None = None
        self._lock = threading.Lock()
        self._lost = threading.Event()
        self._reason: LeaseLost | None = None
        self._notified = False
        self._entered = False
        self._exiting = False  # leaving the block: the renewer no longer interrupts it
        self._closed = False  # left the block: `lost` no longer changes
        self._fencing: AbstractContextManager[str] = nullcontext("")
        self._trace_context: Context | None = None  # what the renewals are sent under

    # What the block asks ----------------------------------------------------------------------

    @property
    def lease(self) -> Lease:
        """The lease as the service answered the acquire."""
        if self._lease is None:
            raise RuntimeError("the lease is not acquired yet: use the handle in a with block")
        return self._lease

    @property
    def generation(self) -> int:
        """The fencing token of this holding: higher than every earlier holding's."""
        return self.lease.generation

    @property
    def holder(self) -> str:
        return self._config.holder

    @property
    def grant(self) -> str | None:
        """The grant of the latest successful acquire or renew: what the release names."""
        with self._lock:
            return self._grant

    @property
    def deadline(self) -> float:
        """The `time.monotonic()` instant until which the lease surely holds: the TTL after the
        last successful acquire or renew was sent. From then on it may have expired."""
        with self._lock:
            return self._clock.deadline

    @property
    def lost(self) -> bool:
        """True once the lease is, or may be, lost; it never turns back to False. After the block,
        it keeps the value it had when the block ended."""
        if self._lost.is_set():
            return True
        with self._lock:
            if self._lease is None or self._closed:
                return False
            if self._clock.expired(time.monotonic()):
                self._mark_lost_locked(self._expired_error())
        return self._lost.is_set()

    @property
    def lost_reason(self) -> LeaseLost | None:
        """Why the lease is lost (the error `check()` raises), or None while it is held."""
        return self._lost_error() if self.lost else None

    def check(self) -> None:
        """Raise `LeaseLost` if the lease is, or may be, lost. Call it between units of work."""
        if self.lost:
            raise self._lost_error()

    @property
    def fencing_token(self) -> str:
        """`<lease>/<generation>`, the value of the `Fencing-Token` header."""
        return format_token(self.name, self.generation)

    def fencing_headers(self) -> dict[str, str]:
        """`{"Fencing-Token": "<lease>/<generation>"}` for requests to a fenced resource."""
        return fencing_headers(self.name, self.generation)

    def __repr__(self) -> str:
        state = "lost" if self._lost.is_set() else "held" if self._lease else "not acquired"
        generation = f" generation={self._lease.generation}" if self._lease else ""
        return f"<{type(self).__name__} {self.name!r}{generation} {state}>"

    # Bookkeeping ------------------------------------------------------------------------------

    def _start(self, lease: Lease, sent_at: float) -> None:
        with self._lock:
            self._lease = lease
            self._grant = lease.grant
            self._clock.acquired(sent_at)
        # Requests made inside the block through a client with the fencing hook carry the token.
        self._fencing = fencing_token(self.name, lease.generation)
        self._trace_context = current_context()

    def _local_refusal(self) -> LeaseHeld:
        return LeaseHeld(
            f"lease {self.name!r} is already held by another handle of this client"
            " (one client is one holder: use one client per concurrent worker)",
            holder=self._config.holder,
            expires_at=datetime.now(UTC),
            retry_after=LOCAL_POLL_SECONDS,
            status=None,
        )

    def _expired_error(self) -> LeaseLost:
        return LeaseLost(
            f"lease {self.name!r} generation {self.generation}: no renewal succeeded within its"
            f" {self.ttl:g} s TTL, so it may have expired",
            generation=self.generation,
            status=None,
        )

    def _mark_lost_locked(self, reason: LeaseLost) -> None:
        if self._reason is None:
            self._reason = reason
        self._lost.set()

    def _mark_lost(self, reason: LeaseLost) -> None:
        with self._lock:
            self._mark_lost_locked(reason)

    def _renewed(self, sent_at: float, lease: Lease) -> bool:
        """Count a successful renewal; False (and lost) if it came after the deadline."""
        with self._lock:
            if self._lost.is_set():
                return False
            if self._clock.renewed(sent_at, time.monotonic()):
                self._grant = lease.grant
                return True
            self._mark_lost_locked(self._expired_error())
            return False

    def _renewal_failed(self, error: TenureError) -> bool:
        """After a failed renewal: True to try again, False when the lease is lost."""
        if renewal_verdict(error) == "retry":
            # False once the deadline passed meanwhile: `lost` recorded why.
            return not self.lost
        if isinstance(error, LeaseLost):
            reason = error
        else:
            reason = LeaseLost(
                f"lease {self.name!r}: renewal refused: {error}",
                generation=self.generation,
                status=error.status,
                problem=error.problem,
            )
        self._mark_lost(reason)
        return False

    def _lost_error(self) -> LeaseLost:
        with self._lock:
            if self._reason is None:
                self._reason = self._expired_error()
            return self._reason

    def _notify_if_lost(self) -> None:
        with self._lock:
            if not self._lost.is_set() or self._notified:
                return
            self._notified = True
        reason = self._lost_error()
        _log.error("%s", reason.detail)
        if self._on_lost is not None:
            try:
                self._on_lost(reason)
            except Exception:
                _log.exception("on_lost callback of lease %r failed", self.name)

    def _release_request(self) -> P.Request[Lease]:
        # Naming the latest grant: a release that arrives late must not end a holding this
        # holder was granted again after sending it.
        name, generation, grant = P.grant_of(self, None, None)
        return P.release(name, self._config.holder, generation, grant)

    def _release_options(self, lost: bool) -> _CallOptions:
        """Releasing is a courtesy (the lease expires by itself): bounded in time, and tried once
        when the lease is already lost."""
        return {
            "retry": NO_RETRY if lost else self._config.retry,
            "http_timeout": min(self._config.timeout, max(MIN_RELEASE_TIMEOUT, self.ttl)),
        }

    def _close(self) -> bool:
        """Freeze `lost` at the end of the block; whether the lease was lost by then."""
        lost = self.lost
        with self._lock:
            self._closed = True
        return lost

    def _enter_once(self) -> None:
        if self._entered:
            raise RuntimeError("a lease handle can be entered only once")
        self._entered = True

    def _end_block(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, lost: bool
    ) -> None:
        """After the release: a block that ended without an error of its own while the lease
        was lost raises `LeaseLost`."""
        if exc_type is None and lost:
            raise self._lost_error()


class _ThreadHandle(_Handle):
    """A handle whose block runs in a thread, which cannot be interrupted: the block looks
    (`check()`, `wait_lost()`), and `on_lost` is called from a thread of its own."""

    def wait_lost(self, timeout: float | None = None) -> bool:
        """Sleep until the lease is lost or `timeout` passes; True if it is lost."""
        self._lost.wait(timeout)
        return self.lost

    def _report_lost(self) -> None:
        """Tell the owner, on a thread of its own: an `on_lost` callback that blocks must not
        hold up the renewal of the client's other leases."""
        threading.Thread(
            target=self._notify_if_lost, name=f"tenure-lost-{self.name}", daemon=True
        ).start()


class _TaskHandle(_Handle):
    """A handle whose block runs in a task: on loss the task is cancelled, and `LeaseLost` is
    raised out of the block instead of the `CancelledError`."""

    # The task running the block (set on entering), and whether the renewer cancelled it.
    _body: asyncio.Task[object] | None = None
    _cancelled_body = False

    def _enter_once(self) -> None:
        super()._enter_once()
        self._body = asyncio.current_task()
        if self._body is None:
            raise RuntimeError("an AsyncLeaseHandle must be entered inside a task")

    def _report_lost(self) -> None:
        self._notify_if_lost()
        if self._lost.is_set() and not self._exiting and self._body is not None:
            self._cancelled_body = True
            self._body.cancel(msg=f"lease {self.name!r} lost")

    def _end_block(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, lost: bool
    ) -> None:
        if self._cancelled_body and self._body is not None:
            others = self._body.uncancel()
            if exc_type is asyncio.CancelledError and others == 0:
                raise self._lost_error() from exc
            if exc_type is not None:
                return  # another cancellation, or the block's own error: let it through
        super()._end_block(exc_type, exc, lost)
