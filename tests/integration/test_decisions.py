"""Each rule is written once, as a function of the migrations (0008, 0009, 0010, 0014): every
statement that writes leases, fences or job windows, or decides by a holding while writing
another table (the monitor's fenced writes) or fencing a transaction (the client's
check_lease), calls one, found in the `.sql` files rather than listed by hand; single and batch
forms of a rule call the same functions; PostgreSQL inlines them into the plans, the window reads'
lookup of each window's lease (0016) as one primary-key probe; and the migrations apply to a
database that already holds leases."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from importlib import resources

import asyncpg
import pytest

import tenure.sql
from tenure import sql
from tenure_server.db import fences, jobs, leases, windows
from tenure_server.db import sql as service_sql
from tenure_server.db.migrate import available, migrate
from tests.integration.test_plans import generic_plan, rows_read
from tests.support import postgres

# The rules: the families of migration functions that decide whether a holding, a lease, a fence
# or a window may change and what it becomes. A statement that changes one calls at least one.
RULE_FAMILIES = (
    "tenure_holds",
    "tenure_holding_named",
    "tenure_bound_to",
    "tenure_extended_until",
    "tenure_may_acquire",
    "tenure_acquired",
    "tenure_first_acquired",
    "tenure_has_next_generation",
    "tenure_renewed",
    "tenure_may_renew",
    "tenure_may_release",
    "tenure_released",
    "tenure_may_verify",
    "tenure_fence_accepts",
    "tenure_fences_raised",
    "tenure_window_due",
    "tenure_may_reclaim_window",
    "tenure_claimed_by",
)
RULE = re.compile(rf"\b(?:{'|'.join(RULE_FAMILIES)})_v\d+\b")
# Statements that write a guarded table without deciding by a rule, each with why.
EXEMPT = {
    "service/leases.sql:await_lease": "marks the lease awaited (who to notify); decides no holding",
    "service/monitoring.sql:end_foreign_holding": (
        "ends any holding of a reserved name by another principal: no holding is named"
    ),
}
GUARDED = ("leases", "fences", "job_windows")
WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)
READS_LEASES = re.compile(r"\b(?:FROM|JOIN)\s+leases\b", re.IGNORECASE)
LOCKS_ROWS = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+UPDATE|UPDATE|SHARE|KEY\s+SHARE)\b", re.I)


def all_statements() -> dict[str, str]:
    """Every named statement of the service's and the client's `.sql` files, as
    `service/file:name` and `client/file:name`."""
    found: dict[str, str] = {}
    for side, package in (("service", service_sql.__name__), ("client", tenure.sql.__name__)):
        for entry in resources.files(package).iterdir():
            if entry.name.endswith(".sql"):
                for name, text in sql.load(entry.name, package).items():
                    found[f"{side}/{entry.name}:{name}"] = text
    return found


def code(statement: str) -> str:
    """The statement without its comments."""
    return "\n".join(re.sub(r"--.*", "", line) for line in statement.splitlines())


def decides_a_holding(statement: str) -> bool:
    """Writes leases, fences or job windows, or reads leases while writing another table or
    locking rows (a fence held for the transaction)."""
    text = code(statement)
    written = {table.lower() for table in WRITE.findall(text)} - {"set"}
    if written & set(GUARDED):
        return True
    return bool(READS_LEASES.search(text)) and bool(written or LOCKS_ROWS.search(text))


def rules_called(statement: str) -> set[str]:
    return set(RULE.findall(code(statement)))


STATEMENTS_DECIDING = sorted(
    name for name, text in all_statements().items() if decides_a_holding(text)
)


def test_the_discovery_finds_the_statements_it_must() -> None:
    """The discovery sees the writes of every guarded table and the fenced writes of others
    (a regression in its patterns would otherwise pass every statement silently)."""
    for expected in (
        "service/leases.sql:acquire_lease",
        "service/lease_batches.sql:renew_leases",
        "service/lease_batches.sql:release_coalesced",
        "service/leases.sql:hand_over_lease",
        "service/leases.sql:force_release_lease",
        "service/fences.sql:verify_fences",
        "service/windows.sql:claim_window",
        "service/windows.sql:complete_window",
        "service/monitoring.sql:open_new_alerts",
        "service/monitoring.sql:resolve_alert",
        "service/monitoring.sql:claim_deliveries",
        "service/admin.sql:bump_generations",
        "client/fences.sql:check_lease",
    ):
        assert expected in STATEMENTS_DECIDING, expected
    assert "service/leases.sql:get_lease" not in STATEMENTS_DECIDING
    assert set(EXEMPT) <= set(STATEMENTS_DECIDING), "an exemption names no such statement"


@pytest.mark.parametrize("name", STATEMENTS_DECIDING)
def test_every_statement_deciding_by_a_holding_calls_a_rule(name: str) -> None:
    """A statement that changes a lease, fence or window, or writes under a holding, decides by
    a rule function: a predicate written inline would be a copy a new rule could miss."""
    if name in EXEMPT:
        return
    assert rules_called(all_statements()[name]), (
        f"{name} decides by a holding without calling a rule function "
        f"({', '.join(family + '_vN' for family in RULE_FAMILIES)}); call one, or exempt it "
        "in EXEMPT with the reason"
    )


# A holding's holder, generation or principal compared with a parameter in the statement itself:
# the "holding is current" rule restated beside (or instead of) tenure_holds_v1.
INLINE_HOLDING = re.compile(
    r"\b(?:holder|generation|principal)\s*(?:=|IS\s+(?:NOT\s+)?DISTINCT\s+FROM)\s*\$\d",
    re.IGNORECASE,
)


@pytest.mark.parametrize("name", sorted(all_statements()))
def test_no_statement_restates_a_holding_inline(name: str) -> None:
    """No statement compares a holding's holder, generation or principal with a request's: that
    is a rule function's body (tenure_holds_v1, tenure_claimed_by_v1, ...), written once."""
    if name in EXEMPT:
        return
    found = INLINE_HOLDING.findall(code(all_statements()[name]))
    assert not found, f"{name} restates a holding inline: {found}"


def test_the_rule_families_are_created_by_the_migrations() -> None:
    """Each rule family names functions that exist, so the list cannot name a rule that is not
    one."""
    created = " ".join(
        " ".join(re.findall(r"CREATE FUNCTION (tenure_\w+_v\d+)", migration.sql))
        for migration in available()
    )
    for family in RULE_FAMILIES:
        assert re.search(rf"\b{family}_v\d+\b", created), family


# Each rule's single statement, then the batch statements that must decide as it does.
FORMS = {
    "acquire": ["acquire_lease", "acquire_leases"],
    "renew": ["renew_lease", "renew_coalesced", "renew_leases"],
    "release": ["release_lease", "release_coalesced"],
    "verify": ["verify_fence", "verify_fences"],
}
STATEMENTS: Mapping[str, str] = {**leases.QUERIES, **fences.QUERIES}
# One example call of each deciding statement, and of each read that judges windows, for its plan.
ARGUMENTS: dict[str, tuple[object, ...]] = {
    "acquire_lease": ("a", "h", 30.0, None),
    "acquire_leases": (["a"], ["h"], [30.0], [None]),
    "renew_lease": ("a", "h", 1, 30.0, None),
    "renew_coalesced": (["a"], ["h"], [1], [30.0], [None]),
    "renew_leases": (["a"], [1], "h", 30.0, None),
    "release_lease": ("a", "h", 1, None, "1"),
    "release_coalesced": (["a"], ["h"], [1], [None], ["1"]),
    "hand_over_lease": ("a", "h", 1, None, "1", "w", 30.0, None),
    "verify_fence": ("r", "a", 1),
    "verify_fences": (["r"], ["a"], [1]),
    "claim_window": ("j", "k", "a", "h", 1, None, None, 0.0),
    "complete_window": ("j", "k", "a", "h", 1, None),
    "explain_window": ("j", "k", "a", "h", 1, None, None, 0.0),
    "get_window": ("j", "k"),
    "list_windows": ("j", None, 10),
    "window_facts": (["j"], ["j"], ["k"]),
}
# Every function a statement may call by name, inlined or not.
INLINED = re.compile(r"\btenure_\w+_v\d+\b")
# A call of one in a plan; not a cast to one of the rules' row types (`::tenure_release_v1`),
# which an inlined rule leaves where its row is used whole (hand_over_lease's released row).
CALLED = re.compile(r"(?<!::)\btenure_\w+_v\d+\b")


@pytest.mark.parametrize("rule", FORMS)
def test_the_single_and_batch_statements_call_the_same_rule_functions(rule: str) -> None:
    """Single and batch forms of a rule cannot decide differently: neither writes the rule, both
    call the same functions of the migrations."""
    single, *batches = FORMS[rule]
    called = set(INLINED.findall(code(STATEMENTS[single])))
    assert called, single
    for batch in batches:
        assert set(INLINED.findall(code(STATEMENTS[batch]))) == called, batch


def test_every_rule_function_is_created_by_a_migration() -> None:
    """What the statements call exists once, in the migrations."""
    created = {
        name
        for migration in available()
        for name in re.findall(r"CREATE FUNCTION (tenure_\w+_v\d+)", migration.sql)
    }
    for name, statement in all_statements().items():
        assert set(INLINED.findall(code(statement))) <= created, name


@pytest.mark.parametrize("name", ARGUMENTS)
async def test_the_rule_functions_are_inlined_into_the_plans(
    connection: asyncpg.Connection[asyncpg.Record], name: str
) -> None:
    """A cached plan holds the rules' expressions, not calls: the functions cost nothing at run
    time (the statements measured as fast as when they spelled the rules out). A function with
    a sub-select is not inlined: tenure_window_interrupted_v2 was a call per window shown."""
    await connection.execute("SET plan_cache_mode = force_generic_plan")
    statement = {**STATEMENTS, **windows.QUERIES, **jobs.QUERIES}[name]
    plan = "\n".join(
        row[0] for row in await connection.fetch("EXPLAIN (VERBOSE) " + statement, *ARGUMENTS[name])
    )
    assert not CALLED.findall(plan), plan


# The statements that show windows, each judging every window it shows by
# tenure_window_claim_v1 (migration 0016), with the literals of a generic plan: all 500 windows.
WINDOW_READS = {
    "window_facts": (
        "'{j}'",
        "'{" + ",".join(["j"] * 500) + "}'",
        "'{" + ",".join(f"k{n}" for n in range(500)) + "}'",
    ),
    "get_window": ("'j'", "'k1'"),
    "list_windows": ("'j'", "NULL", "500"),
    "explain_window": ("'j'", "'k1'", "'l1'", "'h'", "1", "NULL", "NULL", "0"),
}
# Leases a statement looks up besides its windows': explain_window's request names one.
LEASES_REQUESTED = {"explain_window": 1}


@pytest.mark.parametrize("name", WINDOW_READS)
async def test_each_window_shown_looks_its_lease_up_by_primary_key(
    connection: asyncpg.Connection[asyncpg.Record], name: str
) -> None:
    """Among 20,000 lease names, a statement showing windows reads the lease of each window it
    shows by one probe of the primary key, in the plan asyncpg reuses for any parameters: never a
    scan of every lease name, which a join of many windows with leases can be planned as (the
    overview's lookup, as an EXISTS, read 1M names for 1,000 jobs)."""
    await connection.execute(
        "INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at, renewed_at,"
        " expires_at, acquired_xact)"
        " SELECT 'l' || n, 'h', 1, 60, now(), now(), now() + interval '1 minute',"
        " pg_current_xact_id() FROM generate_series(0, 19999) AS n"
    )
    await connection.execute(
        "INSERT INTO job_windows (job, window_key, lease, holder, generation, started_at)"
        " SELECT 'j', 'k' || n, 'l' || n, 'h', 1, now() FROM generate_series(0, 499) AS n"
    )
    await connection.execute("ANALYZE leases, job_windows")
    plan = await generic_plan(
        connection, {**windows.QUERIES, **jobs.QUERIES}[name], *WINDOW_READS[name]
    )
    shown = plan[0]["Actual Rows"]
    probes = [node for node in plan if node.get("Relation Name") == "leases"]
    assert probes, "no scan of leases: tenure_window_claim_v1 was not inlined"
    assert {(node["Node Type"], node["Index Name"]) for node in probes} == {
        ("Index Scan", "leases_pkey")
    }
    assert rows_read(plan, "leases") == shown + LEASES_REQUESTED.get(name, 0)


async def functions_reached(
    connection: asyncpg.Connection[asyncpg.Record], names: set[str]
) -> set[str]:
    """`names` and every migration function their bodies call, as the database holds them."""
    reached: set[str] = set()
    waiting = set(names)
    while waiting:
        name = waiting.pop()
        reached.add(name)
        bodies = await connection.fetch(
            "SELECT pg_get_functiondef(oid) FROM pg_proc WHERE proname = $1", name
        )
        for (body,) in bodies:
            waiting |= set(INLINED.findall(body)) - reached
    return reached


@pytest.mark.parametrize(
    "name", ["acquire_lease", "acquire_leases", "renew_lease", "renew_coalesced", "renew_leases"]
)
async def test_every_grant_extends_a_holding_through_one_function(
    connection: asyncpg.Connection[asyncpg.Record], name: str
) -> None:
    """A renewal and the same holder's re-acquire both extend a holding through
    tenure_extended_until: a cap on extensions is one new version of it, with no bypass."""
    reached = await functions_reached(connection, set(INLINED.findall(code(STATEMENTS[name]))))
    assert any(function.startswith("tenure_extended_until_v") for function in reached), reached


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
