"""Acquires that arrive together share one statement (acquire_leases), and so do renews
(renew_coalesced), releases (release_coalesced) and fence verifies (verify_fences); each is
decided exactly as the single statement alone would decide it."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx
import pytest
from asyncpg.transaction import Transaction

from tenure_server.db.notifications import ReleaseNotifications
from tenure_server.app.operations import Operations
from tenure_server.db.pool import create_pool
from tenure_server.db.repository import Acquire, Release, Renew, Repository, Verify
from tenure_server.domain.fences import Fence, LeaseGeneration
from tests.api.test_leases import release
from tests.integration.test_events import events


@asynccontextmanager
async def row_locked(
    database_url: str, name: str
) -> AsyncIterator[tuple[asyncpg.Connection[asyncpg.Record], Transaction]]:
    """A fenced transaction holding the lease's row FOR SHARE until it is rolled back (or the
    block ends): the connection and the transaction."""
    fenced = await asyncpg.connect(database_url)
    try:
        transaction = fenced.transaction()
        await transaction.start()
        await fenced.execute("SELECT 1 FROM leases WHERE name = $1 FOR SHARE", name)
        yield fenced, transaction
    finally:
        await fenced.close()


@pytest.fixture
async def repository(database_url: str) -> AsyncIterator[Repository]:
    pool = await create_pool(
        database_url, min_size=1, max_size=8, statement_timeout_ms=5000, lock_timeout_ms=4000
    )
    try:
        yield Repository(pool, acquire_timeout=5)
    finally:
        await pool.close()


async def test_one_statement_decides_each_name_as_a_single_acquire_would(
    repository: Repository, database_url: str
) -> None:
    """Free: generation 1 and an event. Held by its holder: extended, same generation, no event.
    Held by another: left out. Expired: taken over with generation + 1 and an event."""
    await repository.acquire_lease("mine", "a", 30, None)
    await repository.acquire_lease("theirs", "b", 30, None)
    await repository.acquire_lease("expired", "b", 1, None)
    await asyncio.sleep(1.1)
    decided = await repository.acquire_leases(
        [
            Acquire("free", "a", 30, None),
            Acquire("mine", "a", 60, None),
            Acquire("theirs", "a", 30, None),
            Acquire("expired", "a", 30, None),
        ]
    )
    assert set(decided) == {"free", "mine", "expired"}
    free, mine, expired = decided["free"], decided["mine"], decided["expired"]
    assert (free[0].generation, free[1] is not None) == (1, True)
    assert (mine[0].generation, mine[1], mine[0].ttl_seconds) == (1, None, 60)
    assert expired[1] is not None
    assert (expired[0].generation, expired[1].kind, expired[1].previous_holder) == (
        2,
        "taken_over",
        "b",
    )
    assert free[0].grant_id == mine[0].grant_id == expired[0].grant_id
    assert Counter(kind for kind, *_ in await events(database_url)) == {
        "acquired": 4,
        "taken_over": 1,
    }


async def test_a_locked_lease_is_skipped_without_delaying_the_others(
    repository: Repository, database_url: str
) -> None:
    """A fenced transaction holds one lease FOR SHARE: the batch decides the other names at once
    and leaves that one out, for acquire_lease to wait on."""
    await repository.acquire_lease("busy", "a", 1, None)
    await asyncio.sleep(1.1)
    async with row_locked(database_url, "busy") as (_, transaction):
        decided = await asyncio.wait_for(
            repository.acquire_leases(
                [Acquire("busy", "b", 30, None), Acquire("calm", "b", 30, None)]
            ),
            timeout=1,
        )
        assert set(decided) == {"calm"}
        waiting = asyncio.create_task(repository.acquire_lease("busy", "b", 30, None))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await transaction.rollback()
        taken = await waiting
    assert taken is not None
    assert taken[0].generation == 2


async def test_batches_racing_over_the_same_names_never_deadlock_or_double_grant(
    repository: Repository,
) -> None:
    """Eight tasks send batches over the same twelve names in shuffled orders, each holder
    wanting every name: no statement fails, and each name has one holder at generation 1."""
    names = [f"job-{i}" for i in range(12)]
    granted: dict[str, set[str]] = {name: set() for name in names}

    async def contender(holder: str) -> None:
        for _ in range(10):
            order = random.sample(names, len(names))
            decided = await repository.acquire_leases([Acquire(n, holder, 30, None) for n in order])
            for name, (lease, _) in decided.items():
                assert lease.generation == 1
                granted[name].add(lease.holder)

    await asyncio.gather(*(contender(f"h{i}") for i in range(8)))
    assert all(len(holders) == 1 for holders in granted.values())


async def test_identical_concurrent_acquires_share_one_decision(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """Twenty identical requests at once (one holder, one name): all 200 with one generation,
    one event in the history, one acquisition counted."""
    body = {"holder": "a", "ttl_seconds": 30}
    responses = await asyncio.gather(
        *(api.post("/v1/leases/hot/acquire", json=body) for _ in range(20))
    )
    assert {response.status_code for response in responses} == {200}
    assert {response.json()["generation"] for response in responses} == {1}
    assert [kind for kind, *_ in await events(database_url)] == ["acquired"]
    metrics = (await api.get("/metrics")).text
    assert 'tenure_lease_acquisitions_total{lease="hot"} 1.0' in metrics


async def test_many_holders_racing_many_names_get_one_holder_each(
    api: httpx.AsyncClient,
) -> None:
    """240 concurrent acquires, 8 holders over 30 names: per name exactly one 200 (the holder
    the lease now names, generation 1), every other answer 409 lease-held."""
    wanted = [(f"n{i}", f"h{j}") for i in range(30) for j in range(8)]
    random.shuffle(wanted)
    responses = await asyncio.gather(
        *(
            api.post(f"/v1/leases/{name}/acquire", json={"holder": holder, "ttl_seconds": 30})
            for name, holder in wanted
        )
    )
    winners: dict[str, list[str]] = {}
    for (name, holder), response in zip(wanted, responses, strict=True):
        assert response.status_code in (200, 409), response.text
        if response.status_code == 200:
            winners.setdefault(name, []).append(holder)
    assert sorted(winners) == sorted({name for name, _ in wanted})
    for name, holders in winners.items():
        assert len(holders) == 1
        current = (await api.get(f"/v1/leases/{name}")).json()
        assert (current["holder"], current["generation"]) == (holders[0], 1)


async def test_identical_acquires_waiting_on_a_locked_lease_share_one_statement(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """A fenced transaction holds the lease's row: the batch skips it, and twenty identical
    requests wait behind it on one statement, not twenty. The others, sent after that statement
    was, share the next one rather than its decision: two grants, one holding."""
    body = {"holder": "a", "ttl_seconds": 30}
    assert (await api.post("/v1/leases/hot/acquire", json=body)).status_code == 200
    async with row_locked(database_url, "hot") as (fenced, transaction):
        requests = [
            asyncio.create_task(api.post("/v1/leases/hot/acquire", json=body)) for _ in range(20)
        ]
        await asyncio.sleep(0.5)
        waiting = await fenced.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        await transaction.rollback()
        responses = await asyncio.gather(*requests)
    assert waiting == 1
    assert {response.status_code for response in responses} == {200}
    assert {response.json()["generation"] for response in responses} == {1}
    assert len({response.json()["grant"] for response in responses}) == 2
    assert [kind for kind, *_ in await events(database_url)] == ["acquired"]


async def test_a_waiting_acquire_never_shares_its_grant(
    api: httpx.AsyncClient, database_url: str
) -> None:
    """A waiting acquire withdraws its holding when its caller goes away, so it must hold a
    grant of its own: an identical request waiting beside it on the same row lock gets another."""
    body = {"holder": "a", "ttl_seconds": 30}
    assert (await api.post("/v1/leases/hot/acquire", json=body)).status_code == 200
    async with row_locked(database_url, "hot") as (_, transaction):
        waiting = asyncio.create_task(
            api.post("/v1/leases/hot/acquire", json={**body, "wait_seconds": 5})
        )
        await asyncio.sleep(0.2)
        at_once = asyncio.create_task(api.post("/v1/leases/hot/acquire", json=body))
        await asyncio.sleep(0.3)
        await transaction.rollback()
        answers = [await waiting, await at_once]
    assert [answer.status_code for answer in answers] == [200, 200]
    grants = {answer.json()["grant"] for answer in answers}
    assert len(grants) == 2


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


async def test_concurrent_verifies_each_get_their_own_answer(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Sixty single verifies at once over twenty resources (coalesced into shared statements):
    the current generation passes everywhere, the superseded one nowhere (whether the resource
    had seen the current one or not), a forged one nowhere; each refusal answered and recorded
    as a single verify's."""
    first = await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    assert (await release(api, first.json())).status_code == 200
    second = await api.post("/v1/leases/job/acquire", json={"holder": "b", "ttl_seconds": 30})
    assert second.json()["generation"] == 2
    resources = [f"store-{index}" for index in range(20)]
    for resource in resources[:10]:  # these have seen generation 2 already
        await api.post(f"/v1/fences/{resource}/verify", json={"lease": "job", "generation": 2})
    wanted = [(resource, generation) for resource in resources for generation in (1, 2, 7)]
    random.shuffle(wanted)
    responses = await asyncio.gather(
        *(
            api.post(f"/v1/fences/{resource}/verify", json={"lease": "job", "generation": g})
            for resource, g in wanted
        )
    )
    answered = {
        (resource, generation): response
        for (resource, generation), response in zip(wanted, responses, strict=True)
    }
    for resource in resources:
        assert answered[resource, 2].status_code == 200, answered[resource, 2].text
        assert answered[resource, 7].json()["type"] == "/problems/unknown-generation"
        stale = answered[resource, 1]
        assert stale.status_code == 409, stale.text
        assert stale.json()["type"] == "/problems/stale-generation"
        assert stale.json()["highest"] == 2
    highest = await connection.fetch("SELECT resource, highest_generation FROM fences")
    assert {row["resource"]: row["highest_generation"] for row in highest} == dict.fromkeys(
        resources, 2
    )
    refusals = await connection.fetch("SELECT kind, generation FROM fence_events")
    assert Counter((row["kind"], row["generation"]) for row in refusals) == {
        ("unknown_generation", 7): 20,
        ("stale_generation", 1): 20,
    }


class _MovesBeforeExplaining(Repository):
    """Hands `job` to its next holder (generation 2) after a statement refused a verify and
    before the refusal is explained: the race the explanation may lose."""

    async def explain_fences(
        self, verifies: list[Verify]
    ) -> list[tuple[Fence | None, LeaseGeneration | None]]:
        async with self.connection() as connection:
            await connection.execute(
                "UPDATE leases SET generation = 2, holder = 'b' WHERE name = 'job'"
            )
        return await super().explain_fences(verifies)


async def test_a_verify_refused_before_the_lease_moved_is_decided_again(
    database_url: str, api: httpx.AsyncClient
) -> None:
    """Generation 2 is unknown when the batch decides, handed out before the refusal is
    explained: it is decided again, and accepted, rather than refused by a stale explanation."""
    await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    pool = await create_pool(
        database_url, min_size=1, max_size=2, statement_timeout_ms=5000, lock_timeout_ms=4000
    )
    try:
        repository = _MovesBeforeExplaining(pool, acquire_timeout=5)
        operations = Operations(repository, ReleaseNotifications(database_url))
        (outcome,) = await operations.verify_fences([Verify("store", "job", 2)])
    finally:
        await pool.close()
    assert isinstance(outcome, Fence)
    assert (outcome.resource, outcome.highest) == ("store", 2)
