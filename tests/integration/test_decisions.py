"""Each lease and fence rule is written once (the functions of migration 0008), its single and
batch statements call it alike, PostgreSQL inlines it into their plans, and the migration applies
to a database that already holds leases."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping

import asyncpg
import pytest

from tenure_server.db import fences, leases
from tenure_server.db.migrate import available, migrate
from tests import postgres

# Each rule's single statement, then the batch statements that must decide as it does.
FORMS = {
    "acquire": ["acquire_lease", "acquire_leases"],
    "renew": ["renew_lease", "renew_coalesced", "renew_leases"],
    "release": ["release_lease", "release_coalesced"],
    "verify": ["verify_fence", "verify_fences"],
}
STATEMENTS: Mapping[str, str] = {**leases.QUERIES, **fences.QUERIES}
# One example call of each deciding statement, for its plan.
ARGUMENTS: dict[str, tuple[object, ...]] = {
    "acquire_lease": ("a", "h", 30.0, None),
    "acquire_leases": (["a"], ["h"], [30.0], [None]),
    "renew_lease": ("a", "h", 1, 30.0, None),
    "renew_coalesced": (["a"], ["h"], [1], [30.0], [None]),
    "renew_leases": (["a"], [1], "h", 30.0, None),
    "release_lease": ("a", "h", 1, None, "1"),
    "release_coalesced": (["a"], ["h"], [1], [None], ["1"]),
    "verify_fence": ("r", "a", 1),
    "verify_fences": (["r"], ["a"], [1]),
}
RULE = re.compile(r"\btenure_\w+_v\d+\b")


def rules_called(statement: str) -> set[str]:
    code = "\n".join(line for line in statement.splitlines() if not line.startswith("--"))
    return set(RULE.findall(code))


@pytest.mark.parametrize("rule", FORMS)
def test_the_single_and_batch_statements_call_the_same_rule_functions(rule: str) -> None:
    """Single and batch forms of a rule cannot decide differently: neither writes the rule, both
    call the same functions of migration 0008."""
    single, *batches = FORMS[rule]
    called = rules_called(STATEMENTS[single])
    assert called, single
    for batch in batches:
        assert rules_called(STATEMENTS[batch]) == called, batch


def test_every_rule_function_is_created_by_a_migration() -> None:
    """What the statements call exists once, in the migrations."""
    created = {
        name
        for migration in available()
        for name in re.findall(r"CREATE FUNCTION (tenure_\w+_v\d+)", migration.sql)
    }
    for forms in FORMS.values():
        for name in forms:
            assert rules_called(STATEMENTS[name]) <= created, name


@pytest.mark.parametrize("name", ARGUMENTS)
async def test_the_rule_functions_are_inlined_into_the_plans(
    connection: asyncpg.Connection[asyncpg.Record], name: str
) -> None:
    """A cached plan holds the rules' expressions, not calls: the functions cost nothing at run
    time (the statements measured as fast as when they spelled the rules out)."""
    await connection.execute("SET plan_cache_mode = force_generic_plan")
    plan = "\n".join(
        row[0]
        for row in await connection.fetch("EXPLAIN (VERBOSE) " + STATEMENTS[name], *ARGUMENTS[name])
    )
    assert not RULE.findall(plan), plan


@pytest.fixture
async def version_7_url(server_url: str) -> AsyncIterator[str]:
    """A database migrated up to 0007 only, as a deployment before this change left it."""
    name = postgres.unique_name("tenure_v7")
    yield await postgres.create_database_at(server_url, name, 7)
    await postgres.drop_database(server_url, name)


async def test_the_migration_applies_to_a_database_with_leases(version_7_url: str) -> None:
    """Leases keep their generations and holdings through migration 0008, and are decided by
    its functions afterwards: the holder renews and releases, the next acquire gets the next
    generation, and a fence accepts only that one."""
    connection = await asyncpg.connect(version_7_url)
    try:
        acquired = await connection.fetchrow(
            "INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at,"
            " expires_at, acquired_xact, granted_xact)"
            " VALUES ('kept', 'a', 41, 60, now(), now(), now() + interval '1 minute',"
            " pg_current_xact_id(), pg_current_xact_id()) RETURNING granted_xact::text"
        )
        assert acquired is not None
        later = [migration.version for migration in available() if migration.version > 7]
        assert await migrate(version_7_url) == later
        assert await connection.fetchval("SELECT generation FROM leases WHERE name = 'kept'") == 41
        renewed = await connection.fetchrow(STATEMENTS["renew_lease"], "kept", "a", 41, 60.0, None)
        assert renewed is not None
        assert renewed["generation"] == 41
        released = await connection.fetchrow(
            STATEMENTS["release_lease"], "kept", "a", 41, None, renewed["grant_id"]
        )
        assert released is not None
        assert not released["held"]
        taken = await connection.fetchrow(STATEMENTS["acquire_lease"], "kept", "b", 60.0, None)
        assert taken is not None
        assert (taken["generation"], taken["new_holding"]) == (42, True)
        assert await connection.fetchrow(STATEMENTS["verify_fence"], "r", "kept", 41) is None
        assert await connection.fetchrow(STATEMENTS["verify_fence"], "r", "kept", 42) is not None
    finally:
        await connection.close()
