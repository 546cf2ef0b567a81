"""The waiting acquires of this process, parked by lease name in the order they parked, and the
hand-over: a release in this process takes the first waiter still there and acquires for it in
the release's own statement (app/leases.py), so that a hand-off costs one commit, not the
release's and then the waiter's. A waiter taken sends no statement of its own until it is told
the outcome, or its acquire would race the hand-over's grant."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tenure_server.domain.errors import RequestAbandoned, ShuttingDown
from tenure_server.domain.leases import Lease
from tenure_server.domain.requests import Acquire, Acquired, HandedOver

# A release that acquires for the waiter given in its own statement: the lease it released and
# what the waiter's acquire got (None: nothing changed).
HandingOver = Callable[[Acquire], Awaitable[HandedOver | None]]


@dataclass(slots=True, eq=False)
class Parked:
    """A waiting acquire between its refusal and its next try: what it asks for, the event that
    wakes it, its caller's leaving, and the outcome of the hand-over (`handed`, set when a
    release takes it)."""

    wanted: Acquire
    woken: asyncio.Event
    abandoned: asyncio.Event | None
    handed: asyncio.Future[Acquired | None] | None = None


class Waiters:
    def __init__(self) -> None:
        self._parked: dict[str, list[Parked]] = {}

    async def park(self, parked: Parked, pause: float, draining: asyncio.Event) -> Acquired | None:
        """Wait up to `pause` for a release, the caller leaving or `draining`: the lease if a
        release handed it over; None: the waiter is to try again. Not handed it, a waiter whose
        caller left raises RequestAbandoned, and one woken by `draining` ShuttingDown."""
        name = parked.wanted.name
        queue = self._parked.setdefault(name, [])
        queue.append(parked)
        try:
            await _first_of(pause, parked.woken, parked.abandoned, draining)
        finally:
            if parked.handed is None:  # not taken by a release: leave the queue
                queue.remove(parked)
                if not queue and self._parked.get(name) is queue:
                    del self._parked[name]
        if parked.handed is not None:  # taken: the hand-over's statement answers soon
            return await asyncio.shield(parked.handed)
        if parked.abandoned is not None and parked.abandoned.is_set():
            raise RequestAbandoned(name) from None
        if draining.is_set():
            raise ShuttingDown() from None
        return None

    def take(self, name: str) -> Parked | None:
        """The first waiter for `name` whose caller is still there, out of the queue."""
        queue = self._parked.get(name, [])
        for index, parked in enumerate(queue):
            if parked.abandoned is None or not parked.abandoned.is_set():
                del queue[index]
                if not queue:
                    del self._parked[name]
                parked.handed = asyncio.get_running_loop().create_future()
                return parked
        return None  # a waiter that left takes itself out of the queue as it wakes

    @staticmethod
    async def hand_over(parked: Parked, release: HandingOver) -> Lease | None:
        """`release` (which acquires for the waiter in its own statement): the released lease, or
        None when nothing changed. The waiter is told the outcome however it ends (None: nothing
        handed over, or failed; it then tries on its own, and an acquire sent after a commit that
        did happen finds it holds the lease)."""
        assert parked.handed is not None, "hand over only a waiter taken"
        handed: HandedOver | None = None
        try:
            handed = await release(parked.wanted)
        finally:
            if not parked.handed.done():
                parked.handed.set_result(None if handed is None else handed[1])
            parked.woken.set()
        return None if handed is None else handed[0]


async def _first_of(seconds: float, *events: asyncio.Event | None) -> None:
    """Return when any event is set or after `seconds`."""
    waits = [asyncio.ensure_future(event.wait()) for event in events if event is not None]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
