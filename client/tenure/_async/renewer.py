"""The client's renewal loop: one task (async) or thread (sync) while the client holds any
lease. It sends what the schedule (`tenure._renewer`) hands out and hands back what came of it;
the async loop sends the batches due together at once, the sync one in turn."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tenure._concurrency import AsyncCondition, AsyncDeadline, AsyncWorker, agather
from tenure._errors import LeaseLost, TenureError
from tenure._renewer import Batch, RenewalSchedule, split, timed_out
from tenure._retry import NO_RETRY
from tenure._tracing import attached

if TYPE_CHECKING:
    from tenure._async.client import AsyncTenure
    from tenure._async.lease import AsyncLeaseHandle

__all__ = ["AsyncRenewer"]


class AsyncRenewer:
    """Renews the client's handles while it holds any: `add` on entering a block, `remove` on
    leaving it."""

    def __init__(self, client: AsyncTenure) -> None:
        self._client = client
        self._schedule: RenewalSchedule[AsyncLeaseHandle] = RenewalSchedule(client)
        # Guards the schedule; notified whenever it changes.
        self._changed = AsyncCondition()
        self._worker: AsyncWorker | None = None

    async def add(self, handle: AsyncLeaseHandle) -> None:
        async with self._changed:
            self._schedule.add(handle)
            # Not alive: a child forked while the parent's thread ran has no thread of its own.
            if self._worker is None or not self._worker.alive():
                self._worker = AsyncWorker(self._run, name="tenure-renew")
            self._changed.notify_all()

    async def remove(self, handle: AsyncLeaseHandle) -> None:
        """Stop renewing `handle`; returns once no renewal of it is on its way (its answer
        names the grant the release must name), or after the client's timeout + 1 s."""
        async with self._changed:
            self._schedule.discard(handle)
            self._changed.notify_all()
            await self._changed.wait_for(
                lambda: handle.name not in self._schedule.sending, self._client.timeout + 1
            )

    async def _run(self) -> None:
        try:
            await self._loop()
        except Exception as error:  # a bug here must not leave the handles looking healthy
            async with self._changed:
                handles = self._schedule.clear()
                self._worker = None
            for handle in handles:
                handle._mark_lost(LeaseLost(f"lease {handle.name!r}: renewer failed: {error!r}"))
                handle._report_lost()

    async def _loop(self) -> None:
        while True:
            async with self._changed:
                if not self._schedule.entries:
                    self._worker = None
                    return
                batches, lost = self._schedule.take(time.monotonic())
                if not batches and not lost:
                    wake = self._schedule.next_wake()
                    await self._changed.wait(
                        None if wake is None else max(0.0, wake - time.monotonic())
                    )
                    continue
            for handle in lost:
                handle._report_lost()
            await agather(self._send, batches)

    async def _send(self, batch: Batch[AsyncLeaseHandle]) -> None:
        # In the trace the (first) holding was acquired in: a batch renews for several at once.
        with attached(batch[0].handle._trace_context):
            await self._renew(batch)

    async def _renew(self, batch: Batch[AsyncLeaseHandle]) -> None:
        async with self._changed:
            # Without the handles whose block ended while earlier batches were sent.
            batch = self._schedule.registered(batch)
            self._changed.notify_all()
            if not batch:
                return
            sent_at = time.monotonic()
            request, timeout = self._schedule.request(batch, sent_at)
        try:
            async with AsyncDeadline(timeout):
                renewals = await self._client._call(request, retry=NO_RETRY, http_timeout=timeout)
        except (TenureError, TimeoutError) as error:
            failure = error if isinstance(error, TenureError) else timed_out(timeout)
            singles = split(batch, failure)
            if singles:
                await agather(self._send, singles)
                return
            async with self._changed:
                ended = self._schedule.failed(batch, failure, time.monotonic())
                self._changed.notify_all()
        else:
            async with self._changed:
                ended = self._schedule.answered(batch, sent_at, renewals)
                self._changed.notify_all()
        for handle in ended:
            handle._report_lost()
