"""Coalesces concurrent requests for one statement into batches, as a database groups commits.

A request joins the batch that starts next, never one already running, so a statement starts
after every request it answers arrived: an expiry it grants counts from a moment after the
client sent its request, as the client's own deadline (send time + TTL) assumes. With fewer
statements running than `max_running`, a batch starts at the end of the event loop's current
round, so an idle service adds no delay and the requests read together share it; under load,
the requests that arrive while statements run share the next one.

A batcher given `alone` (how one request is decided by itself) decides with it what a batch
left undecided, and decides a request alone, in its caller's task, when it finds the batcher
idle (nothing waiting, nothing running) and no other request is read in the same round of the
loop: a batch of one would cost it a task of its own, another round and the batch statement's
arrays. The requests read together still share a batch, as without `alone`; a request decided
alone holds one of the `max_running` places, so those arriving meanwhile share batches too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    def __init__(
        self,
        run: Callable[[list[T]], Awaitable[list[R]]],
        *,
        max_batch: int,
        max_running: int,
        alone: Callable[[T], Awaitable[R]] | None = None,
    ) -> None:
        """`run` answers a batch with one result per request, in order (None: left undecided,
        when `alone` is given)."""
        if max_batch < 1 or max_running < 1:
            raise ValueError("max_batch and max_running must be at least 1")
        self._run = run
        self._max_batch = max_batch
        self._max_running = max_running
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._running: set[asyncio.Task[None]] = set()
        self._alone = alone
        self._deciding_alone = 0  # requests decided alone because the batcher was idle
        self._start_scheduled = False

    async def submit(self, request: T) -> R:
        if self._alone is None:
            return await self._batched(request)
        idle = not (self._pending or self._running or self._deciding_alone)
        if idle and await self._alone_in_round():
            try:
                return await self._alone(request)
            finally:
                self._give_place_back()
        decided = await self._batched(request)
        return decided if decided is not None else await self._alone(request)

    async def _alone_in_round(self) -> bool:
        """Takes a place while the other requests read in this round of the loop submit (they
        do before it resumes). True, keeping the place, when none did; False, the place given
        back, when some did: it joins them in the batch that starts at the end of this round."""
        self._deciding_alone += 1
        try:
            await asyncio.sleep(0)
        except BaseException:
            self._give_place_back()
            raise
        if self._pending:
            self._deciding_alone -= 1
            return False
        return True

    def _give_place_back(self) -> None:
        self._deciding_alone -= 1
        self._start_batches()

    async def _batched(self, request: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if not self._start_scheduled:
            # At the end of this round of the event loop: the requests whose data arrived
            # together are all in the batch, at the cost of no wait.
            self._start_scheduled = True
            asyncio.get_running_loop().call_soon(self._start_round)
        return await future

    def _start_round(self) -> None:
        self._start_scheduled = False
        self._start_batches()

    def _start_batches(self) -> None:
        while self._pending and len(self._running) + self._deciding_alone < self._max_running:
            # A request whose caller went away before its batch started is not run at all.
            batch = [entry for entry in self._pending[: self._max_batch] if not entry[1].done()]
            del self._pending[: self._max_batch]
            if batch:
                task = asyncio.create_task(self._answer(batch))
                self._running.add(task)
                task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._start_batches()

    async def _answer(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._run([request for request, _ in batch])
        except Exception as error:  # every caller of the batch gets the statement's error
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        except BaseException:  # cancelled (shutdown): so are its callers
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


@dataclass(frozen=True, slots=True)
class Coalescing:
    """How concurrent requests share statements: at most `max_batch` requests per statement (1:
    never share), at most `max_statements` running at once; batch requests (a batch verify's)
    share one while it holds at most `max_items` of their items (a batch of batch requests may
    then take several statements, run at once: `disjoint_batches`)."""

    max_batch: int = 1
    max_statements: int = 1
    max_items: int = 1000


NO_COALESCING = Coalescing()


def batcher(
    coalescing: Coalescing,
    run: Callable[[list[T]], Awaitable[list[R]]],
    alone: Callable[[T], Awaitable[R]] | None = None,
) -> Batcher[T, R] | None:
    """A batcher for `run` (and `alone`), or None when requests are not to share statements."""
    if coalescing.max_batch <= 1:
        return None
    return Batcher(
        run, max_batch=coalescing.max_batch, max_running=coalescing.max_statements, alone=alone
    )


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


async def first_per_name(
    wanted: list[N], *, decide: Callable[[list[N]], Awaitable[dict[str, R]]]
) -> list[R | None]:
    """One statement for requests that arrived together (renews, releases, verifies). A second
    request for a name (a verify's: its resource) already in the batch is left undecided (None),
    as are those the statement refused or skipped: each is then decided alone."""
    first: dict[str, N] = {}
    for request in wanted:
        first.setdefault(request.name, request)
    decided = await decide(list(first.values()))
    return [decided.get(one.name) if first[one.name] is one else None for one in wanted]


async def disjoint_batches(
    wanted: list[list[N]], *, decide: Callable[[list[N]], Awaitable[dict[str, R]]], max_items: int
) -> list[dict[str, R]]:
    """As few statements as fit batch requests that arrived together (batch verifies), whose
    items must name distinct things: each request joins the first statement that shares no name
    with it and stays within `max_items` with it, or starts one; the statements run at once.
    Each request gets its statement's whole answer by name, where no other request's names are
    its own."""
    statements: list[tuple[set[str], list[N]]] = []
    joined: list[int] = []
    for batch in wanted:
        names = {one.name for one in batch}
        fits = (
            index
            for index, (taken, items) in enumerate(statements)
            if len(items) + len(batch) <= max_items and taken.isdisjoint(names)
        )
        index = next(fits, len(statements))
        if index == len(statements):
            statements.append((set(), []))
        taken, items = statements[index]
        taken |= names
        items.extend(batch)
        joined.append(index)
    decided = await asyncio.gather(*(decide(items) for _, items in statements))
    return [decided[index] for index in joined]
