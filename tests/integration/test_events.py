"""The lease event history: one row per transition, none per successful renew."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx

from tests.api.test_leases import release


async def events(database_url: str) -> list[tuple[str, str, int, str | None, int | None]]:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            "SELECT kind, holder, generation, previous_holder, previous_generation"
            " FROM lease_events ORDER BY id"
        )
    finally:
        await connection.close()
    return [tuple(row) for row in rows]


async def test_each_lease_transition_is_recorded_once(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Acquire, takeover (with the previous holder and generation), release and a refused renew
    each leave one event; renews and idempotent re-acquires leave none."""
    base = "/v1/leases/close-day"
    await api.post(f"{base}/acquire", json={"holder": "a", "ttl_seconds": 1})
    await api.post(f"{base}/acquire", json={"holder": "a", "ttl_seconds": 1})
    await api.post(f"{base}/renew", json={"holder": "a", "generation": 1, "ttl_seconds": 1})
    await asyncio.sleep(1.1)
    await api.post(f"{base}/renew", json={"holder": "a", "generation": 1, "ttl_seconds": 1})
    taken = (await api.post(f"{base}/acquire", json={"holder": "b", "ttl_seconds": 30})).json()
    await release(api, taken)
    await release(api, taken)
    await api.post(f"{base}/acquire", json={"holder": "c", "ttl_seconds": 30})
    assert await events(database_url) == [
        ("acquired", "a", 1, None, None),
        ("renew_refused", "a", 1, None, None),
        ("taken_over", "b", 2, "a", 1),
        ("released", "b", 2, None, None),
        ("acquired", "c", 3, "b", 2),
    ]


async def test_leases_are_never_deleted(api: httpx.AsyncClient, database_url: str) -> None:
    """Release expires the row; the row and its generation remain."""
    acquired = await api.post("/v1/leases/x/acquire", json={"holder": "a", "ttl_seconds": 30})
    assert (await release(api, acquired.json())).status_code == 200
    connection = await asyncpg.connect(database_url)
    try:
        row = await connection.fetchrow("SELECT generation, expires_at <= now() FROM leases")
    finally:
        await connection.close()
    assert row is not None
    assert tuple(row) == (1, True)
