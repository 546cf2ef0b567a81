"""The lock-wait places: at most `limit` statements of a process wait on a locked row at once,
the others wait for a place up to the lock timeout, a place is given back however its statement
ended, and the limit leaves the pool a connection."""

from __future__ import annotations

import asyncio

import pytest

from tenure_server.app.lock_waits import LockWaits
from tenure_server.domain.errors import StorageUnavailable
from tenure_server.server.settings import Settings


async def test_a_waiter_without_a_place_in_time_is_answered_retry_later() -> None:
    """Two places, both taken: a third waiter waits for one, and is refused (retry) when none
    comes free within its patience."""
    waits = LockWaits(2, patience=0.2)
    async with waits.place("a"), waits.place("b"):
        with pytest.raises(StorageUnavailable, match="'c'") as refused:
            async with waits.place("c"):
                pass  # pragma: no cover
        assert refused.value.retry_after_seconds == 1


async def test_a_place_given_back_goes_to_the_next_waiter() -> None:
    """A waiter gets the place its predecessor gave back, even one whose statement failed."""
    waits = LockWaits(1, patience=5)

    async def failing() -> None:
        async with waits.place("a"):
            await asyncio.sleep(0.1)
            raise RuntimeError("the statement failed")

    first = asyncio.ensure_future(failing())
    await asyncio.sleep(0)
    async with waits.place("b"):
        assert first.done()
    with pytest.raises(RuntimeError):
        await first


async def test_no_places_means_no_statement_waits() -> None:
    """A limit of 0 refuses every waiter at once, whatever its patience; a negative one is a
    mistake."""
    with pytest.raises(StorageUnavailable):
        async with LockWaits(0, patience=None).place("a"):
            pass  # pragma: no cover
    with pytest.raises(ValueError, match="at least 0"):
        LockWaits(-1)


def test_lock_waits_leave_the_pool_a_connection_and_wait_the_lock_timeout() -> None:
    """TENURE_LOCK_WAIT_MAX_CONNECTIONS applies up to one less than the pool's size; a waiter
    waits for a place as long as a statement waits for a lock."""
    assert Settings(lock_wait_max_connections=3).lock_waits == 3
    assert Settings(pool_min_size=1, pool_max_size=2, lock_wait_max_connections=3).lock_waits == 1
    assert Settings(pool_min_size=1, pool_max_size=1).lock_waits == 0
    assert Settings(lock_timeout_ms=2500).lock_wait_patience_seconds == 2.5
    assert Settings(lock_timeout_ms=0).lock_wait_patience_seconds is None
