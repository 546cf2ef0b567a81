"""Operator commands that change many rows at once; run by `tenure admin`, never by the API."""

from __future__ import annotations

import asyncpg

from tenure import MAX_GENERATION
from tenure_server.db.connecting import DEFAULT_CONNECT_TIMEOUT_SECONDS, connect
from tenure_server.db.sql import load

QUERIES = load("admin.sql")


class BumpRefused(ValueError):
    """The bump would move a generation past MAX_GENERATION; nothing was changed."""


async def bump_generations(
    dsn: str, amount: int, connect_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS
) -> tuple[int, int, int]:
    """Move every generation ahead by `amount`; returns (leases bumped, fences raised, the new
    generation floor: a lease unknown to the table starts above it). BumpRefused when a
    generation would pass MAX_GENERATION."""
    if not 1 <= amount <= MAX_GENERATION:
        raise BumpRefused(f"--by must be between 1 and {MAX_GENERATION}")
    connection = await connect(dsn, connect_seconds)
    try:
        try:
            row = await connection.fetchrow(QUERIES["bump_generations"], amount)
        # The floor's trigger refuses a floor past the bound (check_violation), and with it the
        # whole statement; a lease already far past it (an install from before the bound) would
        # overflow bigint first.
        except (asyncpg.CheckViolationError, asyncpg.NumericValueOutOfRangeError):
            raise _refusal(amount, await highest_generation(connection)) from None
    finally:
        await connection.close()
    if row is None:
        raise RuntimeError("bump_generations returned no row")
    return int(row["leases"]), int(row["fences"]), int(row["floor"])


async def highest_generation(connection: asyncpg.Connection[asyncpg.Record]) -> int:
    """The highest generation the floor, a lease or a fence holds."""
    return int(await connection.fetchval(QUERIES["highest_generation"]))


def _refusal(amount: int, highest: int) -> BumpRefused:
    room = MAX_GENERATION - highest
    possible = f"--by may be at most {room}" if room > 0 else "no bump is possible"
    return BumpRefused(
        f"--by {amount} would move generations past {MAX_GENERATION}, the largest Tenure hands "
        "out (2**53 - 1: JSON readers such as JavaScript read no larger integer exactly). The "
        f"highest generation known is {highest}: {possible}. Nothing was changed."
    )
