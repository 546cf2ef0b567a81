"""Acquires that arrive together share one statement (acquire_leases), each decided exactly as
the single statement alone would decide it, and batches racing each other, single acquires and
fenced transactions never deadlock. Renews and releases:
test_coalescing_renew_release.py; fence verifies: test_coalescing_verify.py."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx
from asyncpg.transaction import Transaction

from tenure_server.db.leases import QUERIES
from tenure_server.db.repository import Repository
from tenure_server.domain.leases import Lease
from tenure_server.domain.requests import Acquire
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


# A holding short enough to expire between rounds, so that names change holder (updates of
# existing rows) while others are new.
SHORT_TTL = 0.05


async def test_batches_of_known_and_new_names_never_deadlock_beside_singles_and_fences(
    repository: Repository, database_url: str
) -> None:
    """Rounds of four batches over overlapping names, each in its own order and mixing names
    that exist (held, expired, or just taken) with names no statement has used yet, beside
    single acquires of the same names and a fenced transaction holding one FOR SHARE: no
    statement fails (a deadlock is a 500), a name has one holder at a time, and each new
    holding's generation is the one before it plus one."""
    grants: list[Lease] = []
    known: list[str] = []
    fenced = await asyncpg.connect(database_url)

    async def batch(names: list[str]) -> None:
        wanted = [Acquire(name, random.choice("ab"), SHORT_TTL, None) for name in names]
        grants.extend(lease for lease, _ in (await repository.acquire_leases(wanted)).values())

    async def single(name: str) -> None:
        acquired = await repository.acquire_lease(name, random.choice("ab"), SHORT_TTL, None)
        if acquired is not None:
            grants.append(acquired[0])

    async def share(name: str) -> None:
        async with fenced.transaction():
            await fenced.execute("SELECT 1 FROM leases WHERE name = $1 FOR SHARE", name)
            await asyncio.sleep(0.005)

    try:
        for round_ in range(40):
            names = known[-8:] + [f"r{round_}-{n}" for n in range(6)]
            await asyncio.gather(
                *(batch(random.sample(names, min(8, len(names)))) for _ in range(4)),
                *(single(random.choice(names)) for _ in range(3)),
                share(random.choice(known or names)),
            )
            known = sorted(set(known) | set(names))
            await asyncio.sleep(random.choice((0, SHORT_TTL)))
    finally:
        await fenced.close()
    assert_one_holder_at_a_time(grants)
    assert_generations_step_by_one(grants, await events_by_lease(database_url))


def assert_one_holder_at_a_time(grants: list[Lease]) -> None:
    """Each (name, generation) has one holder, and a holding begins no earlier than the
    previous one of its name was last granted to expire."""
    holdings: dict[tuple[str, int], list[Lease]] = {}
    for lease in grants:
        holdings.setdefault((lease.name, lease.generation), []).append(lease)
    for (name, generation), granted in holdings.items():
        assert len({lease.holder for lease in granted}) == 1, granted
        before = holdings.get((name, generation - 1), [])
        if before:
            began = min(lease.acquired_at for lease in granted)
            assert began >= max(lease.expires_at for lease in before), (before, granted)


async def events_by_lease(database_url: str) -> dict[str, list[tuple[str, int]]]:
    """Each lease's new holdings in the order they were recorded: (holder, generation)."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(
            "SELECT lease, holder, generation FROM lease_events"
            " WHERE kind IN ('acquired', 'taken_over') ORDER BY id"
        )
    finally:
        await connection.close()
    recorded: dict[str, list[tuple[str, int]]] = {}
    for lease, holder, generation in rows:
        recorded.setdefault(lease, []).append((holder, generation))
    return recorded


def assert_generations_step_by_one(
    grants: list[Lease], recorded: dict[str, list[tuple[str, int]]]
) -> None:
    """Every name's holdings are generations 1, 2, 3, … in order, and each grant names the
    holder its generation was recorded for."""
    for holdings in recorded.values():
        assert [generation for _, generation in holdings] == list(range(1, len(holdings) + 1))
    for lease in grants:
        assert recorded[lease.name][lease.generation - 1] == (lease.holder, lease.generation)


async def until_waiting(connection: asyncpg.Connection[asyncpg.Record], count: int) -> None:
    """Returns once `count` sessions of this database wait on a lock."""
    for _ in range(500):
        waiting = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        if waiting >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {count} sessions wait on a lock")


def batch_of(holder: str, *names: str) -> tuple[str, list[str], list[str], list[float], list[None]]:
    """acquire_leases and its arguments: `names` acquired by `holder` for 30 s."""
    count = len(names)
    return QUERIES["acquire_leases"], list(names), [holder] * count, [30.0] * count, [None] * count


async def test_a_batch_waiting_to_insert_a_name_has_updated_no_row(
    database_url: str,
) -> None:
    """The order that deadlocked, made to happen: batch B began before `n3` existed, inserted
    `n1` and waits on `n2` (another transaction inserting it). Meanwhile h acquires `n3`, and
    batch A of h re-acquires `n3` and inserts `n1`, waiting on B. When B goes on to `n3`, it
    waits on whoever is writing that row: had A updated it first, B would wait on A and A on
    B. A batch inserts its new names before it updates any row: both finish."""
    a, b, c, d, watch = [await asyncpg.connect(database_url) for _ in range(5)]
    try:
        inserting = d.transaction()
        await inserting.start()
        await d.execute(QUERIES["acquire_lease"], "n2", "d", 30.0, None)
        batch_b = asyncio.create_task(b.fetch(*batch_of("b", "n1", "n2", "n3")))
        await until_waiting(watch, 1)
        await c.execute(QUERIES["acquire_lease"], "n3", "h", 30.0, None)
        batch_a = asyncio.create_task(a.fetch(*batch_of("h", "n3", "n1")))
        await until_waiting(watch, 2)
        await inserting.rollback()
        decided_a, decided_b = await asyncio.wait_for(asyncio.gather(batch_a, batch_b), 5)
    finally:
        for connection in (a, b, c, d, watch):
            await connection.close()
    assert [(row["name"], row["holder"]) for row in decided_a] == [("n3", "h")]
    assert sorted((row["name"], row["holder"]) for row in decided_b) == [("n1", "b"), ("n2", "b")]


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
