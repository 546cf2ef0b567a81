"""Renews that arrive together share one statement (renew_coalesced), and so do releases
(release_coalesced); each is decided exactly as the single statement alone would decide it."""

from __future__ import annotations

import asyncio
import random

import httpx

from tenure_server.db.repository import Repository
from tenure_server.domain.requests import Release, Renew
from tests.api.test_leases import release
from tests.integration.test_coalescing import row_locked
from tests.integration.test_events import events


async def test_one_statement_renews_each_name_as_a_single_renew_would(
    repository: Repository, database_url: str
) -> None:
    """Held by the renewer: renewed with the new TTL and a new grant, no event. Held by another,
    an older generation, expired: left out, for renew_lease to refuse (and record)."""
    await repository.acquire_lease("mine", "a", 30, None)
    await repository.acquire_lease("theirs", "b", 30, None)
    await repository.acquire_lease("expired", "a", 1, None)
    await asyncio.sleep(1.1)
    before = await events(database_url)
    renewed = await repository.renew_coalesced(
        [
            Renew("mine", "a", 1, 60, None),
            Renew("theirs", "a", 1, 60, None),
            Renew("expired", "a", 1, 60, None),
            Renew("never", "a", 1, 60, None),
        ]
    )
    assert set(renewed) == {"mine"}
    mine = renewed["mine"]
    assert (mine.holder, mine.generation, mine.ttl_seconds, mine.held) == ("a", 1, 60, True)
    assert mine.expires_in_seconds > 59
    assert await events(database_url) == before


async def test_a_locked_lease_is_skipped_by_a_renew_batch_without_delaying_the_others(
    repository: Repository, database_url: str
) -> None:
    await repository.acquire_lease("busy", "a", 30, None)
    await repository.acquire_lease("calm", "a", 30, None)
    async with row_locked(database_url, "busy"):
        renewed = await asyncio.wait_for(
            repository.renew_coalesced(
                [Renew("busy", "a", 1, 30, None), Renew("calm", "a", 1, 30, None)]
            ),
            timeout=1,
        )
    assert set(renewed) == {"calm"}


async def test_concurrent_renews_each_get_their_own_answer(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Forty renews at once, half of a lease's current holding and half of a generation it no
    longer has: each valid one 200, each stale one 409 lease-lost with its refusal recorded."""
    for index in range(20):
        name = f"job-{index}"
        await api.post(f"/v1/leases/{name}/acquire", json={"holder": "a", "ttl_seconds": 1})
    await asyncio.sleep(1.1)
    for index in range(20):  # taken over: generation 2 now
        await api.post(f"/v1/leases/job-{index}/acquire", json={"holder": "a", "ttl_seconds": 30})
    wanted = [(f"job-{index}", generation) for index in range(20) for generation in (1, 2)]
    random.shuffle(wanted)
    responses = await asyncio.gather(
        *(
            api.post(
                f"/v1/leases/{name}/renew",
                json={"holder": "a", "generation": generation, "ttl_seconds": 60},
            )
            for name, generation in wanted
        )
    )
    for (_, generation), response in zip(wanted, responses, strict=True):
        if generation == 2:
            assert response.status_code == 200, response.text
            assert (response.json()["generation"], response.json()["ttl_seconds"]) == (2, 60)
        else:
            assert response.status_code == 409, response.text
            assert response.json()["type"].endswith("/lease-lost")
    refused = [event for event in await events(database_url) if event[0] == "renew_refused"]
    assert sorted(generation for _, _, generation, *_ in refused) == [1] * 20


async def test_one_statement_releases_each_name_as_a_single_release_would(
    repository: Repository, database_url: str
) -> None:
    """The holding named with its latest grant: released, with its event. Another generation,
    an older grant, a holding already released: left out, for release_lease to explain."""
    grants = {}
    for name in ("plain", "granted", "regranted", "released", "moved"):
        acquired = await repository.acquire_lease(name, "a", 30, None)
        assert acquired is not None
        assert acquired[0].grant_id is not None
        grants[name] = acquired[0].grant_id
    await repository.renew_lease("regranted", "a", 1, 30, None)  # its grant is older now
    await repository.release_lease("released", "a", 1, None, grants["released"])
    before = len(await events(database_url))
    released = await repository.release_coalesced(
        [
            Release("plain", "a", 1, None, grants["plain"]),
            Release("granted", "a", 1, None, grants["granted"]),
            Release("regranted", "a", 1, None, grants["regranted"]),
            Release("released", "a", 1, None, grants["released"]),
            Release("moved", "a", 2, None, grants["moved"]),
        ]
    )
    assert set(released) == {"plain", "granted"}
    assert all(not lease.held and lease.released_at is not None for lease in released.values())
    recorded = (await events(database_url))[before:]
    assert sorted((kind, generation) for kind, _, generation, *_ in recorded) == [
        ("released", 1),
        ("released", 1),
    ]


async def test_concurrent_releases_each_get_their_own_answer_and_wake_their_waiter(
    api: httpx.AsyncClient,
) -> None:
    """Twenty releases at once, each twice but the awaited one's: every one 200 (a second
    release of a holding is answered with the lease as it is); the waiter holds its lease right
    after (a second release of that one could find the waiter holding it: lease-lost)."""
    holdings = {}
    for index in range(20):
        acquired = await api.post(
            f"/v1/leases/job-{index}/acquire", json={"holder": "a", "ttl_seconds": 30}
        )
        holdings[f"job-{index}"] = acquired.json()
    waiter = asyncio.create_task(
        api.post(
            "/v1/leases/job-7/acquire",
            json={"holder": "b", "ttl_seconds": 30, "wait_seconds": 10},
        )
    )
    await asyncio.sleep(0.3)  # waiting
    wanted = [f"job-{index}" for index in range(20)] * 2
    wanted.remove("job-7")
    random.shuffle(wanted)
    responses = await asyncio.gather(*(release(api, holdings[name]) for name in wanted))
    assert {response.status_code for response in responses} == {200}, [
        response.text for response in responses if response.status_code != 200
    ]
    assert all(response.json()["held"] is False for response in responses)
    taken = await asyncio.wait_for(waiter, 5)
    assert taken.status_code == 200
    assert (taken.json()["holder"], taken.json()["generation"]) == ("b", 2)
