"""The lease handle's block: enter acquires and joins the client's renewal loop, exit leaves it
and releases. What the handle knows and decides is in `tenure._lease`."""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import TYPE_CHECKING, Self

from tenure._concurrency import asleep
from tenure._errors import TenureError
from tenure._lease import LOCAL_POLL_SECONDS, LostCallback, _TaskHandle

if TYPE_CHECKING:
    from tenure._async.client import AsyncTenure

__all__ = ["AsyncLeaseHandle"]

_log = logging.getLogger("tenure")


class AsyncLeaseHandle(_TaskHandle):
    """A lease held for the length of a block by one client; see `tenure._lease` for when it is
    lost and what the block then sees."""

    def __init__(
        self,
        client: AsyncTenure,
        name: str,
        ttl: float,
        *,
        wait: float = 0.0,
        renew_every: float | None = None,
        on_lost: LostCallback | None = None,
    ) -> None:
        super().__init__(client, name, ttl, wait=wait, renew_every=renew_every, on_lost=on_lost)
        self._client = client

    async def __aenter__(self) -> Self:
        self._enter_once()
        deadline = time.monotonic() + self.wait
        while not self._client._enter_name(self.name):
            if time.monotonic() >= deadline:
                raise self._local_refusal()
            await asleep(LOCAL_POLL_SECONDS)
        try:
            remaining = max(0.0, deadline - time.monotonic())
            lease, sent_at = await self._client._acquire(self.name, self.ttl, remaining)
        except BaseException:
            self._client._leave_name(self.name)
            raise
        self._start(lease, sent_at)
        self._fencing.__enter__()
        await self._client._renewer.add(self)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Set before the first wait: from here on the renewer never interrupts the block, so an
        # interruption it asked for was delivered inside the block, if at all.
        self._exiting = True
        await self._client._renewer.remove(self)
        lost = self._close()
        self._notify_if_lost()  # lost at the very end: the loop may not have seen it
        try:
            await self._client._call(self._release_request(), **self._release_options(lost))
        except TenureError as error:
            _log.warning("releasing lease %r failed (it expires by itself): %s", self.name, error)
        finally:
            self._fencing.__exit__(None, None, None)
            self._client._leave_name(self.name)
        self._end_block(exc_type, exc, lost)
