"""One renewal loop per client, shared by all its lease handles.

The holdings due for renewal are renewed together: one batch renew request per TTL (at most
`RENEW_BATCH_SIZE` holdings each), from one thread (`Tenure`) or one task (`AsyncTenure`),
however many handles the client holds. When one handle is due, every handle due within half of
its own interval joins the batch, so handles acquired at different moments fall into step and a
process holding a thousand leases sends a few requests per interval, not a thousand.

Each handle keeps its own clock, backoff and verdict (`_lease._Handle`): a holding the service
reports lost is lost, and a request that failed is retried for each holding at the handle's own
pace. A batch refused as a whole (a 4xx: one name this token may not renew, a batch longer than
the service allows) is split into batches of one, so each holding gets its own answer.

Here is the loop's schedule, without I/O; the loop itself is written once, as `AsyncRenewer` in
`tenure/_async/renewer.py`, and `Renewer` is generated from it (scripts/generate_sync.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from tenure import _protocol as P
from tenure._errors import LeaseLost, ServiceUnavailable, TenureError, TransportError
from tenure._models import Renewals
from tenure._renewal import renewal_verdict, retry_after

if TYPE_CHECKING:
    from tenure._client import ClientBase
    from tenure._lease import _Handle

H = TypeVar("H", bound="_Handle")

__all__ = ["RENEW_BATCH_SIZE", "Batch", "RenewalSchedule", "split", "timed_out"]

_log = logging.getLogger("tenure")

# Holdings per batch renew request; a service configured with a smaller TENURE_MAX_BATCH_SIZE
# refuses longer batches, which are then sent one holding at a time.
RENEW_BATCH_SIZE = 100


@dataclass(eq=False)
class _Entry(Generic[H]):
    handle: H
    wake_at: float
    failures: int = 0


# Holdings renewed in one request.
Batch = list[_Entry[H]]


class RenewalSchedule(Generic[H]):
    """Which holdings to renew when, and what each answer does to them. No I/O: the sync and
    async renewers send what it hands out and hand back what came of it."""

    def __init__(self, client: ClientBase) -> None:
        self._client = client
        # By lease name: a client holds a name through one handle at a time.
        self.entries: dict[str, _Entry[H]] = {}
        self.sending: set[str] = set()

    def add(self, handle: H) -> None:
        self.entries[handle.name] = _Entry(handle, handle._clock.next_renewal())

    def discard(self, handle: H) -> None:
        entry = self.entries.get(handle.name)
        if entry is not None and entry.handle is handle:
            del self.entries[handle.name]

    def clear(self) -> list[H]:
        """Renew nothing any more (the loop failed); the handles it was renewing."""
        handles = [entry.handle for entry in self.entries.values()]
        self.entries.clear()
        self.sending.clear()
        return handles

    def take(self, now: float) -> tuple[list[Batch[H]], list[H]]:
        """The batches to send now (marked as being sent), and the handles whose lease turned
        lost on the clock (no longer renewed)."""
        lost = [entry.handle for entry in self.entries.values() if entry.handle.lost]
        for handle in lost:
            self.discard(handle)
        idle = [entry for entry in self.entries.values() if entry.handle.name not in self.sending]
        if not any(entry.wake_at <= now for entry in idle):
            return [], lost
        due = [entry for entry in idle if entry.wake_at - entry.handle._clock.interval / 2 <= now]
        by_ttl: dict[float, Batch[H]] = {}
        for entry in due:
            by_ttl.setdefault(entry.handle.ttl, []).append(entry)
            self.sending.add(entry.handle.name)
        batches = [
            group[start : start + RENEW_BATCH_SIZE]
            for group in by_ttl.values()
            for start in range(0, len(group), RENEW_BATCH_SIZE)
        ]
        return batches, lost

    def next_wake(self) -> float | None:
        """When to look again: the earliest renewal, or deadline, of a holding not being sent."""
        times = [
            min(entry.wake_at, entry.handle._clock.deadline)
            for entry in self.entries.values()
            if entry.handle.name not in self.sending
        ]
        return min(times, default=None)

    def registered(self, batch: Batch[H]) -> Batch[H]:
        """The batch without the handles removed since it was taken (their block has ended)."""
        kept = [entry for entry in batch if self.entries.get(entry.handle.name) is entry]
        for entry in batch:
            if entry not in kept:
                self.sending.discard(entry.handle.name)
        return kept

    def request(self, batch: Batch[H], sent_at: float) -> tuple[P.Request[Renewals], float]:
        """The batch renew, and its timeout: over before the earliest deadline of any holding,
        so that the loop, waiting for it, never misses the moment a lease may be lost."""
        holdings = [(entry.handle.name, entry.handle.generation) for entry in batch]
        timeout = min(
            entry.handle._clock.request_timeout(sent_at, self._client.timeout)
            for entry in [*batch, *self.entries.values()]
        )
        return P.renew_many(self._client.holder, holdings, batch[0].handle.ttl), timeout

    def answered(self, batch: Batch[H], sent_at: float, renewals: Renewals) -> list[H]:
        """Count the answer; the handles it ended."""
        renewed = {lease.name: lease for lease in renewals.renewed}
        undecided = set(renewals.undecided)
        ended = []
        for entry in batch:
            handle = entry.handle
            lease = renewed.get(handle.name)
            if (handle.name, handle.generation) in undecided:
                # Its row stayed locked (a fenced transaction): as if its request had failed.
                ended += self.failed([entry], _undecided(handle), time.monotonic())
            elif lease is None or lease.generation != handle.generation:
                handle._renewal_failed(_reported_lost(handle))
                ended.append(handle)
            elif handle._renewed(sent_at, lease):
                entry.failures = 0
                entry.wake_at = handle._clock.next_renewal()
            else:
                ended.append(handle)
        return self._ended(batch, ended)

    def failed(self, batch: Batch[H], error: TenureError, now: float) -> list[H]:
        """A batch that got no answer, or a refusal: retry each holding at its pace, or lose it.
        The handles it ended."""
        ended, asked = [], retry_after(error)
        for entry in batch:
            if entry.handle._renewal_failed(error):
                entry.failures += 1
                clock, retry = entry.handle._clock, self._client.retry
                entry.wake_at = clock.retry_at(now, entry.failures, retry, asked)
            else:
                ended.append(entry.handle)
        if len(ended) < len(batch):  # one line for the batch, not one per lease
            names = ", ".join(repr(entry.handle.name) for entry in batch[:3])
            more = f" and {len(batch) - 3} more" if len(batch) > 3 else ""
            _log.warning("renewing lease %s%s failed, will retry: %s", names, more, error)
        return self._ended(batch, ended)

    def _ended(self, batch: Batch[H], ended: list[H]) -> list[H]:
        for entry in batch:
            self.sending.discard(entry.handle.name)
        for handle in ended:
            self.discard(handle)
        return ended


def _reported_lost(handle: H) -> LeaseLost:
    return LeaseLost(
        f"lease {handle.name!r} generation {handle.generation}: the renewal answered that this"
        " holding is gone (expired, released or taken over)",
        generation=handle.generation,
    )


def _undecided(handle: H) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"lease {handle.name!r}: its row stayed locked by another transaction; retrying"
    )


def split(batch: Batch[H], error: TenureError) -> list[Batch[H]] | None:
    """A batch of several refused as a whole: one batch per holding, for each one's answer."""
    if len(batch) > 1 and renewal_verdict(error) == "lost":
        return [[entry] for entry in batch]
    return None


def timed_out(seconds: float) -> TenureError:
    return TransportError(f"renewal got no answer within {seconds:.3f} s")
