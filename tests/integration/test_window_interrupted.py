"""Whether a window is interrupted, as this release's statements answer it
(tenure_window_interrupted_v3 of the lease each looks up once, migration 0015) and as the previous
release's do (tenure_window_interrupted_v2, which looks the lease up itself): the same for every
kind of window, so that replicas of both agree during a rolling deploy."""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

import asyncpg

from tenure_server.db.jobs import QUERIES as JOBS
from tenure_server.db.windows import QUERIES as WINDOWS

Connection: TypeAlias = "asyncpg.Connection[asyncpg.Record]"


class Case(NamedTuple):
    """A window claimed by holder `h` at generation 2, and its lease as it is now: held by
    `holder` at `generation` until `expires_in` seconds from now (None: no lease row)."""

    holder: str
    generation: int
    expires_in: float | None
    completed: bool
    held: bool
    interrupted: bool


CASES = {
    "running": Case("h", 2, 60.0, completed=False, held=True, interrupted=False),
    "completed": Case("h", 2, -60.0, completed=True, held=False, interrupted=False),
    "expired": Case("h", 2, -60.0, completed=False, held=False, interrupted=True),
    "taken-over": Case("other", 3, 60.0, completed=False, held=False, interrupted=True),
    "same-holder-later": Case("h", 3, 60.0, completed=False, held=False, interrupted=True),
    "no-lease": Case("h", 2, None, completed=False, held=False, interrupted=True),
}


async def windows_of_each_case(connection: Connection) -> None:
    for key, case in CASES.items():
        if case.expires_in is not None:
            await connection.execute(
                "INSERT INTO leases (name, holder, generation, ttl_seconds, acquired_at,"
                " renewed_at, expires_at, acquired_xact)"
                " VALUES ($1, $2, $3, 60, now(), now(), now() + make_interval(secs => $4),"
                " pg_current_xact_id())",
                f"lease-{key}",
                case.holder,
                case.generation,
                case.expires_in,
            )
        await connection.execute(
            "INSERT INTO job_windows (job, window_key, lease, holder, generation, started_at,"
            " completed_at)"
            " VALUES ('j', $1, $2, 'h', 2, now(), CASE WHEN $3 THEN now() END)",
            key,
            f"lease-{key}",
            case.completed,
        )


async def test_every_statement_answers_a_window_as_the_previous_release_does(
    connection: Connection,
) -> None:
    """Running, completed, expired, taken over, re-acquired at a later generation, its lease row
    missing: window_facts, get_window, list_windows and explain_window say interrupted exactly
    when v2 does, and window_facts' lease_held is the lookup v3 judged by."""
    await windows_of_each_case(connection)
    previous = {
        row["window_key"]: row["interrupted"]
        for row in await connection.fetch(
            "SELECT window_key, tenure_window_interrupted_v2(lease, holder, generation,"
            " completed_at, now()) AS interrupted FROM job_windows"
        )
    }
    expected = {key: case.interrupted for key, case in CASES.items()}
    assert previous == expected
    facts = await connection.fetch(JOBS["window_facts"], [], ["j"] * len(CASES), list(CASES))
    assert {row["window_key"]: row["interrupted"] for row in facts} == expected
    assert {row["window_key"]: row["lease_held"] for row in facts} == {
        key: case.held for key, case in CASES.items()
    }
    listed = await connection.fetch(WINDOWS["list_windows"], "j", None, 100)
    assert {row["window_key"]: row["interrupted"] for row in listed} == expected
    for key in CASES:
        window = await connection.fetchrow(WINDOWS["get_window"], "j", key)
        explained = await connection.fetchrow(
            WINDOWS["explain_window"], "j", key, f"lease-{key}", "h", 2, None, None, 0.0
        )
        assert window is not None
        assert explained is not None
        assert (window["interrupted"], explained["interrupted"]) == (expected[key],) * 2, key
