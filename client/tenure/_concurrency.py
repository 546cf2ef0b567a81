"""The few things a thread and a task do differently, in both flavors.

The client's code is written once, async, in `tenure._async`, against the `Async…` names here
(and `asleep`, `agather`); scripts/generate_sync.py generates `tenure._sync` from it by swapping in
the plain names, which block instead (httpcore's `_synchronization.py` does the same).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from contextlib import suppress
from typing import Any, TypeVar

__all__ = [
    "AsyncCondition",
    "AsyncDeadline",
    "AsyncWorker",
    "Condition",
    "Deadline",
    "Worker",
    "agather",
    "asleep",
    "gather",
    "sleep",
]

T = TypeVar("T")


async def asleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def sleep(seconds: float) -> None:
    time.sleep(seconds)


async def agather(send: Callable[[T], Awaitable[None]], items: Iterable[T]) -> None:
    """`send` each item, all at once."""
    await asyncio.gather(*(send(item) for item in items))


def gather(send: Callable[[T], None], items: Iterable[T]) -> None:
    """`send` each item, one after another: a thread waits for one answer at a time."""
    for item in items:
        send(item)


class AsyncCondition:
    """`Condition` for the tasks of one event loop. There, code between two awaits runs alone,
    so `async with` takes no lock, and entering never suspends: a caller cannot be cancelled
    there. What it guards must not await, but in `wait` / `wait_for`."""

    def __init__(self) -> None:
        # Set by `notify_all` for the tasks waiting then, and replaced for the later ones.
        self._changed = asyncio.Event()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *_: object) -> None:
        return None

    def notify_all(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self, seconds: float | None) -> None:
        """Until notified, or `seconds` passed (None: no limit)."""
        with suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._changed.wait()

    async def wait_for(self, predicate: Callable[[], bool], seconds: float) -> None:
        """Until `predicate()` is true, or `seconds` passed."""
        with suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while not predicate():
                    await self._changed.wait()


class Condition:
    """A lock, and waiting for a change under it, the waits bounded in time."""

    def __init__(self) -> None:
        self._condition = threading.Condition()

    def __enter__(self) -> None:
        self._condition.acquire()

    def __exit__(self, *_: object) -> None:
        self._condition.release()

    def notify_all(self) -> None:
        self._condition.notify_all()

    def wait(self, seconds: float | None) -> None:
        """Until notified, or `seconds` passed (None: no limit)."""
        self._condition.wait(seconds)

    def wait_for(self, predicate: Callable[[], bool], seconds: float) -> None:
        """Until `predicate()` is true, or `seconds` passed."""
        self._condition.wait_for(predicate, seconds)


class AsyncDeadline:
    """Cancels what runs inside it after `seconds`, raising `TimeoutError`."""

    def __init__(self, seconds: float) -> None:
        self._timeout = asyncio.timeout(seconds)

    async def __aenter__(self) -> None:
        await self._timeout.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._timeout.__aexit__(*exc_info)


class Deadline:
    """Does nothing: a thread cannot be interrupted, so what runs inside it must bound itself
    (a request, by its HTTP timeout)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


class AsyncWorker:
    """`target()` running in a task of its own."""

    def __init__(self, target: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        self._task = asyncio.create_task(target(), name=name)

    def alive(self) -> bool:
        return not self._task.done()


class Worker:
    """`target()` running in a daemon thread of its own."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()
