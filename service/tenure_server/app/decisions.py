"""How every use case decides, in one loop: it runs its one deciding statement and, when that
statement changed nothing, reads the facts the statement decided by (its explaining read) and
turns them into a domain error.

The rules are written once, as functions of the migrations that both the deciding statement and
its explaining read call; Python never restates a predicate, it only maps facts to errors. The
explaining read comes after the decision, so the state may have moved in between (the lease
expired, the window was released): then the facts say the decision would pass now, and it is
simply taken again, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tenure_server.domain.errors import StorageUnavailable, TenureError

# How many times a decision is retaken when the state moved between it and its explanation.
DECISION_ATTEMPTS = 5

Answer = TypeVar("Answer")


def still_moving(operation: str) -> StorageUnavailable:
    return StorageUnavailable(f"{operation}: the state kept changing under contention; retry")


async def decide(
    operation: str,
    statement: Callable[[int], Awaitable[Answer | None]],
    explain: Callable[[], Awaitable[Answer | TenureError | None]],
) -> Answer:
    """Decide by `statement` (called with the attempt, from 0), which answers None when it
    changed nothing; then `explain` reads the facts and answers the refusal (raised), an answer
    after all (a retried request finding its own earlier success), or None: the decision would
    pass now, so it is taken again. After DECISION_ATTEMPTS: 503, the state kept changing."""
    for attempt in range(DECISION_ATTEMPTS):
        decided = await statement(attempt)
        if decided is not None:
            return decided
        outcome = await explain()
        if isinstance(outcome, TenureError):
            raise outcome
        if outcome is not None:
            return outcome
    raise still_moving(operation)
