"""Operator commands that change many rows at once; run by `tenure admin`, never by the API."""

from __future__ import annotations

from tenure_server.db.connecting import DEFAULT_CONNECT_TIMEOUT_SECONDS, connect
from tenure_server.db.sql import load

_SQL = load("admin.sql")

# Generations are bigint; a bump must leave room for every later acquire.
MAX_BUMP = 2**62


async def bump_generations(
    dsn: str, amount: int, connect_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS
) -> tuple[int, int, int]:
    """Move every generation ahead by `amount`; returns (leases bumped, fences raised, the new
    generation floor: a lease unknown to the table starts above it)."""
    if not 1 <= amount <= MAX_BUMP:
        raise ValueError(f"--by must be between 1 and {MAX_BUMP}")
    connection = await connect(dsn, connect_seconds)
    try:
        row = await connection.fetchrow(_SQL["bump_generations"], amount)
    finally:
        await connection.close()
    if row is None:
        raise RuntimeError("bump_generations returned no row")
    return int(row["leases"]), int(row["fences"]), int(row["floor"])
