"""Operator commands: the generation bump after a restore."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from tenure import MAX_GENERATION
from tenure_server.db.admin import BumpRefused, bump_generations


async def test_a_bump_expires_leases_and_refuses_every_older_generation(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """After `bump-generations`, holders must acquire again above the bump, and fences refuse
    every generation handed out before it."""
    await api.post("/v1/leases/close-day/acquire", json={"holder": "a", "ttl_seconds": 60})
    await api.post("/v1/fences/payments/verify", json={"lease": "close-day", "generation": 1})
    assert await bump_generations(database_url, 1000) == (1, 1, 1001)
    renew = await api.post(
        "/v1/leases/close-day/renew", json={"holder": "a", "generation": 1, "ttl_seconds": 60}
    )
    assert renew.status_code == 409
    stale = await api.post(
        "/v1/fences/payments/verify", json={"lease": "close-day", "generation": 1}
    )
    assert stale.json()["highest"] == 1001
    taken = await api.post("/v1/leases/close-day/acquire", json={"holder": "b", "ttl_seconds": 60})
    assert taken.json()["generation"] == 1002


async def test_a_bump_must_be_positive_and_bounded(database_url: str) -> None:
    """Zero, negative or overflowing amounts are refused before touching anything."""
    for amount in (0, -5, MAX_GENERATION + 1, 2**63):
        with pytest.raises(ValueError, match="--by"):
            await bump_generations(database_url, amount)


async def test_a_bump_past_the_largest_generation_is_refused_whole(
    api: httpx.AsyncClient, database_url: str, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """A bump that would move a generation (the floor's included) past MAX_GENERATION is refused,
    saying how far generations may still move, and changes nothing; one that reaches it exactly
    is done, after which no bump is possible."""
    await api.post("/v1/leases/close-day/acquire", json={"holder": "a", "ttl_seconds": 60})
    await api.post("/v1/fences/payments/verify", json={"lease": "close-day", "generation": 1})

    async def generations() -> tuple[int, ...]:
        """The lease's, the fence's and the floor's."""
        [row] = await connection.fetch(
            "SELECT (SELECT generation FROM leases), (SELECT highest_generation FROM fences),"
            " (SELECT generation FROM tenure_generation_floor)"
        )
        return tuple(row)

    assert await generations() == (1, 1, 0)
    with pytest.raises(BumpRefused, match=f"--by may be at most {MAX_GENERATION - 1}"):
        await bump_generations(database_url, MAX_GENERATION)
    assert await generations() == (1, 1, 0)

    assert await bump_generations(database_url, MAX_GENERATION - 1) == (1, 1, MAX_GENERATION)
    with pytest.raises(BumpRefused, match="no bump is possible"):
        await bump_generations(database_url, 1)
    assert await generations() == (MAX_GENERATION,) * 3
