"""Coalescing: a request is answered by a batch that started after it arrived, batches respect
their size and concurrency bounds, and a failure reaches exactly the callers of its batch."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from tenure_server.app.coalescing import Batcher, disjoint_batches


class Recorder:
    """A statement that takes a while, remembering each batch and which were running at once."""

    def __init__(self, seconds: float = 0.01, fail_on: int | None = None) -> None:
        self.seconds = seconds
        self.fail_on = fail_on
        self.batches: list[list[int]] = []
        self.running = 0
        self.most_running = 0

    async def run(self, batch: list[int]) -> list[int]:
        self.batches.append(batch)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await asyncio.sleep(self.seconds)
            if self.fail_on in batch:
                raise RuntimeError("the statement failed")
            return [item * 10 for item in batch]
        finally:
            self.running -= 1


async def test_each_caller_gets_its_own_answer_and_an_idle_batcher_starts_at_once() -> None:
    """One request alone is its own batch; many at once are answered each with its own result."""
    recorder = Recorder()
    batcher = Batcher(recorder.run, max_batch=8, max_running=2)
    assert await batcher.submit(7) == 70
    assert recorder.batches == [[7]]
    assert await asyncio.gather(*(batcher.submit(i) for i in range(40))) == [
        i * 10 for i in range(40)
    ]


async def test_requests_that_arrive_in_one_round_of_the_loop_share_one_batch() -> None:
    """The batch starts at the end of the event loop's round, not at the first request: requests
    that arrived together (one read of many sockets) share it even with statements to spare."""
    recorder = Recorder()
    batcher = Batcher(recorder.run, max_batch=8, max_running=2)
    assert await asyncio.gather(*(batcher.submit(i) for i in range(3))) == [0, 10, 20]
    assert recorder.batches == [[0, 1, 2]]


async def test_batches_respect_their_size_and_concurrency_bounds() -> None:
    """At most max_batch requests per statement and max_running statements at once; the
    requests that arrive while statements run share the next ones."""
    recorder = Recorder()
    batcher = Batcher(recorder.run, max_batch=5, max_running=2)
    await asyncio.gather(*(batcher.submit(i) for i in range(23)))
    assert recorder.most_running == 2
    assert all(1 <= len(batch) <= 5 for batch in recorder.batches)
    assert sorted(item for batch in recorder.batches for item in batch) == list(range(23))
    assert len(recorder.batches) < 23


async def test_a_request_never_joins_a_batch_that_already_started() -> None:
    """A request sent while a statement runs is answered by a later statement, so whatever the
    statement grants counts from after the request arrived."""
    started: list[tuple[list[int], float]] = []
    loop = asyncio.get_running_loop()

    async def run(batch: list[int]) -> list[float]:
        started.append((batch, loop.time()))
        await asyncio.sleep(0.02)
        return [loop.time()] * len(batch)

    batcher = Batcher(run, max_batch=100, max_running=1)
    arrivals: dict[int, float] = {}

    async def send(item: int) -> None:
        await asyncio.sleep(item * 0.003)
        arrivals[item] = loop.time()
        await batcher.submit(item)

    await asyncio.gather(*(send(i) for i in range(30)))
    for batch, at in started:
        assert all(arrivals[item] <= at for item in batch)
    assert len(started) > 1


async def test_a_failed_statement_fails_only_the_callers_of_its_batch() -> None:
    """Every caller of the failing batch gets its error; the other batches answer normally."""
    recorder = Recorder(fail_on=3)
    batcher = Batcher(recorder.run, max_batch=1, max_running=4)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(6)), return_exceptions=True)
    assert [type(result) for result in results].count(RuntimeError) == 1
    assert isinstance(results[3], RuntimeError)


async def test_a_caller_gone_before_its_batch_started_is_not_run() -> None:
    """Cancelled while queued: its request never reaches the statement."""
    recorder = Recorder(seconds=0.05)
    batcher = Batcher(recorder.run, max_batch=10, max_running=1)
    first = asyncio.create_task(batcher.submit(1))
    await asyncio.sleep(0.01)
    gone = asyncio.create_task(batcher.submit(2))
    kept = asyncio.create_task(batcher.submit(3))
    await asyncio.sleep(0.01)
    gone.cancel()
    assert (await first, await kept) == (10, 30)
    assert recorder.batches == [[1], [3]]


class Alone:
    """How one request is decided by itself: remembers each, and which ran at once with batches."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.decided: list[int] = []

    async def decide(self, item: int) -> int:
        self.decided.append(item)
        self.recorder.running += 1
        self.recorder.most_running = max(self.recorder.most_running, self.recorder.running)
        try:
            await asyncio.sleep(self.recorder.seconds)
            return item * 100
        finally:
            self.recorder.running -= 1


async def test_a_request_that_finds_the_batcher_idle_is_decided_alone() -> None:
    """Nobody to share with: no batch of one; the requests arriving while it runs share batches,
    and it holds one of the statements' places meanwhile. Requests read in one round of the loop
    still share a batch."""
    recorder = Recorder()
    alone = Alone(recorder)
    batcher = Batcher(recorder.run, max_batch=8, max_running=2, alone=alone.decide)
    assert await batcher.submit(7) == 700
    assert (alone.decided, recorder.batches) == ([7], [])
    assert await asyncio.gather(*(batcher.submit(i) for i in range(3))) == [0, 10, 20]
    assert alone.decided == [7]
    assert [sorted(batch) for batch in recorder.batches] == [[0, 1, 2]]
    recorder.batches.clear()
    first = asyncio.create_task(batcher.submit(1))
    await asyncio.sleep(0)  # the first is being decided alone
    later = [asyncio.create_task(batcher.submit(i)) for i in range(2, 12)]
    assert await asyncio.gather(first, *later) == [100] + [i * 10 for i in range(2, 12)]
    assert alone.decided == [7, 1]
    assert recorder.batches == [[2, 3, 4, 5, 6, 7, 8, 9], [10, 11]]
    assert recorder.most_running == 2


async def test_what_a_batch_leaves_undecided_is_decided_alone() -> None:
    """A batch's None is no answer: that request is decided alone, in its caller's task."""

    async def run(batch: list[int]) -> list[int | None]:
        return [None if item % 2 else item for item in batch]

    async def decide(item: int) -> int | None:
        await asyncio.sleep(0)  # the first, alone, still runs when the others arrive
        return -item

    batcher: Batcher[int, int | None] = Batcher(run, max_batch=8, max_running=1, alone=decide)
    answers = await asyncio.gather(*(batcher.submit(i) for i in range(5)))
    assert answers == [0, -1, 2, -3, 4]


def test_bounds_below_one_are_refused() -> None:
    """A batcher that could never run anything is a configuration error."""

    async def run(batch: list[int]) -> list[int]:
        return batch

    with pytest.raises(ValueError, match="at least 1"):
        Batcher(run, max_batch=0, max_running=1)


@dataclass(frozen=True)
class Item:
    name: str
    request: int


async def test_batch_requests_share_statements_only_where_their_names_are_distinct() -> None:
    """Batch requests that arrived together share a statement where no name is in it twice and
    it stays within its size; each request is answered by the statement that decided its
    items, which holds none of another request's names."""
    statements: list[list[Item]] = []

    async def decide(items: list[Item]) -> dict[str, int]:
        statements.append(items)
        names = [item.name for item in items]
        assert len(set(names)) == len(names), "a statement names a thing twice"
        return {item.name: item.request for item in items}

    wanted = [
        [Item("a", 0), Item("b", 0)],
        [Item("c", 1)],
        [Item("b", 2), Item("d", 2)],  # b is request 0's
        [Item("e", 3), Item("f", 3)],
        [Item("g", 4)],  # the first statement is full
    ]
    answers = await disjoint_batches(wanted, decide=decide, max_items=5)
    assert [[item.request for item in items] for items in statements] == [
        [0, 0, 1, 3, 3],
        [2, 2, 4],
    ]
    for request, (batch, answer) in enumerate(zip(wanted, answers, strict=True)):
        assert [answer[item.name] for item in batch] == [request] * len(batch)


async def test_a_batch_request_larger_than_the_bound_gets_a_statement_of_its_own() -> None:
    """A request is never split: one above `max_items` (the bound is a preference, the request
    was admitted by its own limit) is decided whole, by itself."""

    async def decide(items: list[Item]) -> dict[str, int]:
        return {item.name: len(items) for item in items}

    wanted = [[Item("a", 0)], [Item(name, 1) for name in "bcd"]]
    answers = await disjoint_batches(wanted, decide=decide, max_items=2)
    assert answers == [{"a": 1}, dict.fromkeys("bcd", 3)]
