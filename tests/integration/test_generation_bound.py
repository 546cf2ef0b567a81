"""Every generation stops at tenure.MAX_GENERATION (2**53 - 1): the floor's trigger refuses to
pass it, and the single and batch acquires begin no holding past it. Only the owner of the floor
writes it: migration 0009 takes the rights installs granted before."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import timedelta

import asyncpg
import pytest

from tenure import MAX_GENERATION
from tenure_server.db import leases
from tenure_server.db.migrate import migrate
from tests.support import postgres
from tests.support.postgres import execute

WRITES = ("INSERT", "UPDATE", "DELETE", "TRUNCATE")
FLOOR = "tenure_generation_floor"
STATEMENTS: Mapping[str, str] = leases.QUERIES


@pytest.fixture
async def roles(server_url: str) -> AsyncIterator[tuple[str, str]]:
    """Two roles of unique names in the tests' cluster (roles are not per database); dropped
    after the database that grants them rights (ask for this fixture first)."""
    names = (postgres.unique_name("tenure_runtime"), postgres.unique_name("tenure_hand"))
    for name in names:
        await execute(server_url, f"CREATE ROLE {name} NOLOGIN")
    yield names
    for name in names:
        await execute(server_url, f"DROP ROLE IF EXISTS {name}")


@pytest.fixture
async def version_6_url(server_url: str) -> AsyncIterator[str]:
    """A database migrated up to 0006, before the floor existed."""
    name = postgres.unique_name("tenure_v6")
    yield await postgres.create_database_at(server_url, name, 6)
    await postgres.drop_database(server_url, name)


async def privileges(connection: asyncpg.Connection[asyncpg.Record], role: str) -> set[str]:
    rows = await connection.fetch(
        "SELECT p FROM unnest($2::text[]) AS p WHERE has_table_privilege($1, $3, p)",
        role,
        ["SELECT", *WRITES],
        FLOOR,
    )
    return {row["p"] for row in rows}


async def test_the_migration_takes_every_write_on_the_floor_from_all_but_its_owner(
    roles: tuple[str, str], version_6_url: str
) -> None:
    """A runtime role granted its rights as the guide did before 0007 (default privileges), a
    role granted everything by hand and PUBLIC all lose INSERT, UPDATE, DELETE and TRUNCATE on
    the floor; the runtime role keeps SELECT (new leases start above it), the owner keeps all."""
    runtime, by_hand = roles
    connection = await asyncpg.connect(version_6_url)
    try:
        await connection.execute(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public"
            f" GRANT SELECT, INSERT, UPDATE ON TABLES TO {runtime}"
        )
        await postgres.migrate_up_to(version_6_url, 7)
        await connection.execute(f"GRANT ALL ON {FLOOR} TO {by_hand} WITH GRANT OPTION")
        await connection.execute(f"GRANT UPDATE ON {FLOOR} TO PUBLIC")
        assert await privileges(connection, runtime) == {"SELECT", "INSERT", "UPDATE"}

        await migrate(version_6_url)

        assert await privileges(connection, runtime) == {"SELECT"}
        assert await privileges(connection, by_hand) == {"SELECT"}
        assert await privileges(connection, "public") == set()
        owner = await connection.fetchval(
            "SELECT relowner::regrole::text FROM pg_class WHERE oid = $1::regclass", FLOOR
        )
        assert await privileges(connection, owner) == {"SELECT", *WRITES}
    finally:
        await connection.close()


async def test_the_floor_never_passes_the_largest_generation(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """Even its owner cannot raise the floor past MAX_GENERATION (2**53 - 1); up to it, it
    rises."""
    with pytest.raises(asyncpg.CheckViolationError, match=str(MAX_GENERATION)):
        await connection.execute(f"UPDATE {FLOOR} SET generation = $1", MAX_GENERATION + 1)
    assert await connection.fetchval(f"SELECT generation FROM {FLOOR}") == 0
    await connection.execute(f"UPDATE {FLOOR} SET generation = $1", MAX_GENERATION)
    assert await connection.fetchval(f"SELECT generation FROM {FLOOR}") == MAX_GENERATION


async def test_the_sql_bound_is_the_client_s(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """The SQL rules stop where tenure.MAX_GENERATION says: 2**53 - 1, the largest integer JSON
    readers such as JavaScript read exactly."""
    assert MAX_GENERATION == 2**53 - 1 == float(2**53 - 1)
    assert await connection.fetchval("SELECT tenure_max_generation_v1()") == MAX_GENERATION


async def lease_at(
    connection: asyncpg.Connection[asyncpg.Record], name: str, generation: int, *, held: bool
) -> None:
    """A lease of holder "a" at `generation`, held for a minute or expired a second ago."""
    await connection.execute(
        "INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at,"
        " expires_at, acquired_xact, granted_xact) VALUES ($1, 'a', $2, 60, now(), now(),"
        " now() + CASE WHEN $3 THEN interval '1 minute' ELSE interval '-1 second' END,"
        " pg_current_xact_id(), pg_current_xact_id())",
        name,
        generation,
        held,
    )


async def test_the_single_and_batch_acquires_leave_an_exhausted_lease_alone(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """With the floor at the bound, the batch acquires the lease below it and leaves out the one
    at it and the new name; the single statement refuses both too, and explain_holding names the
    generation none may follow. The holder of a lease at the bound still extends it."""
    await lease_at(connection, "top", MAX_GENERATION, held=False)
    await lease_at(connection, "mine", MAX_GENERATION, held=True)
    await lease_at(connection, "mid", 5, held=False)
    await connection.execute(f"UPDATE {FLOOR} SET generation = $1", MAX_GENERATION)

    names = ["mid", "new", "top"]
    batch = await connection.fetch(
        STATEMENTS["acquire_leases"], names, ["b"] * 3, [30.0] * 3, [None] * 3
    )
    assert [(row["name"], row["generation"]) for row in batch] == [("mid", 6)]
    for name in ("new", "top"):
        assert await connection.fetchrow(STATEMENTS["acquire_lease"], name, "b", 30.0, None) is None
    mine = await connection.fetchrow(STATEMENTS["acquire_lease"], "mine", "a", 30.0, None)
    assert mine is not None
    assert (mine["generation"], mine["new_holding"]) == (MAX_GENERATION, False)

    explained = {
        name: (await connection.fetch(STATEMENTS["explain_holding"], name, "b", None, None, None))[
            0
        ]
        for name in ("new", "top", "mid")
    }
    assert {name: row["exhausted_at"] for name, row in explained.items()} == {
        "new": MAX_GENERATION,
        "top": MAX_GENERATION,
        "mid": None,
    }
    assert explained["new"]["name"] is None
    assert await connection.fetchval("SELECT count(*) FROM leases WHERE name = 'new'") == 0


async def test_a_holding_allowed_at_the_bound_is_extended_even_if_it_lapsed_meanwhile(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """acquire_lease allows by one clock reading and decides by a later one: a lease at the bound
    that its holder held at the first but not the second is extended (decided as at its last
    held instant), never moved past the bound; below the bound it is a new holding, as before."""
    await lease_at(connection, "top", MAX_GENERATION, held=True)
    await lease_at(connection, "mid", 5, held=True)
    decide = (
        "SELECT (tenure_acquired_v2(l, 'a', 30, NULL, l.expires_at + interval '1 second')).*"
        " FROM leases AS l WHERE name = $1"
    )
    top = await connection.fetchrow(decide, "top")
    assert top is not None
    assert top["generation"] == MAX_GENERATION
    expiry = await connection.fetchval("SELECT expires_at FROM leases WHERE name = 'top'")
    assert top["renewed_at"] == expiry - timedelta(microseconds=1)
    mid = await connection.fetchrow(decide, "mid")
    assert mid is not None
    assert mid["generation"] == 6
