"""Lease answers are read by column name: a statement may select Lease's columns in any order and
beside others, and a swapped pair of same-typed columns lands in the right fields."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import pytest

from tenure_server.db.leases import read_acquired, read_lease, read_leases
from tenure_server.domain.leases import Lease

ACQUIRED = datetime(2026, 1, 1, tzinfo=UTC)
RENEWED = datetime(2026, 1, 2, tzinfo=UTC)
EXPIRES = datetime(2026, 1, 3, tzinfo=UTC)
EXPECTED = Lease("l", "h", 7, 30.0, ACQUIRED, RENEWED, EXPIRES, None, "p", "42", True, 12.5)
# Lease's columns with the values of EXPECTED.
COLUMNS = {
    "name": "'l'::text",
    "holder": "'h'::text",
    "generation": "7::bigint",
    "ttl_seconds": "30::float8",
    "acquired_at": "'2026-01-01Z'::timestamptz",
    "renewed_at": "'2026-01-02Z'::timestamptz",
    "expires_at": "'2026-01-03Z'::timestamptz",
    "released_at": "NULL::timestamptz",
    "principal": "'p'::text",
    "grant_id": "'42'::text",
    "held": "true",
    "expires_in_seconds": "12.5::float8",
}


def select(order: list[str], extra: str = "") -> str:
    columns = ", ".join(f"{COLUMNS[name]} AS {name}" for name in order)
    return f"SELECT {columns}{extra} FROM generate_series(1, 3)"


async def test_columns_in_another_order_decode_the_same(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """The columns reversed, the timestamps of one holding in swapped places, and a column
    Lease does not have: every field is read from its own column."""
    order = list(reversed(COLUMNS))
    first, second = order.index("acquired_at"), order.index("renewed_at")
    order[first], order[second] = order[second], order[first]
    rows = await connection.fetch(select(order, ", 'x' AS previous_holder"))
    assert read_leases(rows) == [EXPECTED] * 3
    assert read_lease(rows[0]) == EXPECTED
    in_order = await connection.fetch(select(list(COLUMNS)))
    assert read_leases(in_order) == read_leases(rows)


async def test_an_acquire_answer_is_read_by_name(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """The acquire's own columns (new_holding, took_over, previous_holder) first, Lease's after
    them: the lease and the takeover event it began."""
    extra = "true AS new_holding, true AS took_over, 'g'::text AS previous_holder"
    row = await connection.fetchrow(select(list(COLUMNS)).replace("SELECT ", f"SELECT {extra}, "))
    assert row is not None
    lease, event = read_acquired(row)
    assert lease == EXPECTED
    assert event is not None
    assert (event.kind, event.previous_holder, event.previous_generation) == ("taken_over", "g", 6)


async def test_a_missing_column_is_refused(
    connection: asyncpg.Connection[asyncpg.Record],
) -> None:
    """An answer without one of Lease's columns is a bug of its statement, not a lease."""
    rows = await connection.fetch(select([name for name in COLUMNS if name != "held"]))
    with pytest.raises(AssertionError, match="not one column for each field"):
        read_leases(rows)
