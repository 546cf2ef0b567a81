"""Deliberately broken variants, for the negative controls only: the harness run with one of
them must report violations, which proves the checker is not vacuous. Nothing in the product
imports this module, and `chaos.run` uses it only when given `--variant`.

- `key-share`: the same-database fence with `FOR KEY SHARE` instead of `FOR SHARE`. An acquire
  updates the lease row without changing its key (`FOR NO KEY UPDATE`), which does not conflict
  with `FOR KEY SHARE`: a takeover commits while the old holder's write is still open.
- `check-then-write`: the fence checks the lease row with a plain `SELECT`, no row lock; the
  takeover slips in between the check and the write.
- `arrival-deadline`: the client counts its deadline from the answer's arrival instead of the
  request's send: a slow answer makes it believe in a lease that has already expired.
- `async-commit` (not code: a database setting): `synchronous_commit=off` and an immediate crash
  right after an acknowledgement lose an acknowledged generation, which is then handed out again.
- `async-replication` (not code: a database setting, with F10): the standby is asynchronous
  (`synchronous_standby_names = ''`), so a failover loses the commits it had not received, and
  the promoted standby hands their generations out again.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

from tenure import LeaseLost
from tenure.pg import Connection, fenced_transaction

VARIANTS: Final = (
    "correct",
    "key-share",
    "check-then-write",
    "arrival-deadline",
    "async-commit",
    "async-replication",
)

# The product's check (client/tenure/sql/fences.sql, check_lease) with the lock weakened or gone.
_CHECK: Final = (
    "SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND generation = $3 "
    "AND expires_at > clock_timestamp()"
)
KEY_SHARE_CHECK: Final = _CHECK + " FOR KEY SHARE"
# The product's timeouts for the transaction (tenure.pg's defaults).
_TIMEOUTS: Final = (
    "SELECT set_config('lock_timeout', '2000', true), "
    "set_config('statement_timeout', '5000', true), "
    "set_config('idle_in_transaction_session_timeout', '5000', true)"
)
UNLOCKED_CHECK: Final = _CHECK


@asynccontextmanager
async def broken_fenced_transaction(
    connection: Connection, lease: str, holder: str, generation: int, *, check: str
) -> AsyncIterator[Connection]:
    """`tenure.pg.fenced_transaction`, with `check` as its lease check."""
    async with connection.transaction(isolation="read_committed"):
        await connection.execute(_TIMEOUTS)
        if await connection.fetchval(check, lease, holder, generation) is None:
            raise LeaseLost(f"lease {lease!r} generation {generation} is gone", status=None)
        yield connection


def fence_for(variant: str) -> str | None:
    """The check statement a broken fence variant uses; None for the product's own."""
    return {"key-share": KEY_SHARE_CHECK, "check-then-write": UNLOCKED_CHECK}.get(variant)


def fenced(
    variant: str, connection: Connection, lease: str, holder: str, generation: int
) -> AbstractAsyncContextManager[Connection]:
    """The fenced transaction of `variant`: the product's unless it is a broken fence."""
    check = fence_for(variant)
    if check is None:
        return fenced_transaction(connection, lease, holder, generation)
    return broken_fenced_transaction(connection, lease, holder, generation, check=check)


class ArrivalTimeBelief:
    """The broken client clock: deadline = the answer's *arrival* + TTL. The correct one
    (`tenure._renewal.LeaseClock`, wrapped by `chaos.actor.SendTimeBelief`) counts from the send."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.interval = ttl / 3
        self.last_sent = -math.inf
        self._deadline = -math.inf

    @property
    def deadline(self) -> float:
        return self._deadline

    def acquired(self, sent: float, received: float) -> None:
        self.last_sent = sent
        self._deadline = received + self.ttl

    def renewed(self, sent: float, received: float) -> bool:
        self.last_sent = max(self.last_sent, sent)
        self._deadline = max(self._deadline, received + self.ttl)
        return True

    def expired(self, now: float) -> bool:
        return now >= self.deadline

    def next_renewal(self) -> float:
        return self.last_sent + self.interval
