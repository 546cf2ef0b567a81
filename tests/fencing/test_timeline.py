"""The seed's failure timeline, with real OS processes, ends with A's write refused:

    A acquires the lease (TTL 2 s) ............ the test stops A (SIGSTOP) past the TTL
    B acquires it (a higher generation) ....... and writes
    the test resumes A (SIGCONT) .............. A writes with its old generation: REFUSED

for the middleware with each fence store and for the same-database fence, and the protected
data holds B's writes only. Tenure runs as its own process (`tenure serve`) on the per-test
database; the payments example (examples/payments_api.py, through tests.support.payments) and
A and B (tests/fencing/worker.py) are processes too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.fencing.worker import DAY
from tests.support.payments import payments_service
from tests.support.processes import Processes

WORKER = Path(__file__).with_name("worker.py")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

TTL = "2"
# B asks Tenure to wait for the lease: it is answered as soon as A's holding expires.
B_WAIT = "10"
COMMISSIONS = """
CREATE TABLE commissions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    writer     text NOT NULL,
    generation bigint NOT NULL
)
"""


def line(process: subprocess.Popen[str]) -> dict[str, Any]:
    """The next JSON line the process prints; fails with its stderr if it ends instead."""
    assert process.stdout is not None
    text = process.stdout.readline()
    if not text:
        process.wait(10)
        assert process.stderr is not None
        pytest.fail(f"{process.args!r} ended ({process.returncode}): {process.stderr.read()}")
    facts: dict[str, Any] = json.loads(text)
    return facts


def run_timeline(
    processes: Processes, tmp_path: Path, mode: str, tenure_url: str, target: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A acquires and is stopped; B acquires and writes; A resumes and writes. Returns
    (A's generation line, B's write outcome, A's write outcome)."""
    go_a, go_b = tmp_path / "go-a", tmp_path / "go-b"
    go_b.touch()
    common = (tenure_url, "close-day", TTL)
    a = processes.python(WORKER, mode, *common, "0", str(go_a), "A", target)
    a_held = line(a)
    os.kill(a.pid, signal.SIGSTOP)
    try:
        b = processes.python(WORKER, "sql" if mode == "sql-inside" else mode, *common, B_WAIT,
                   str(go_b), "B", target)  # fmt: skip
        b_held = line(b)
        b_wrote = line(b)
        assert b_held["generation"] > a_held["generation"]
        go_a.touch()
    finally:
        os.kill(a.pid, signal.SIGCONT)
    a_wrote = line(a)
    assert a.wait(10) == 0
    assert b.wait(10) == 0
    return a_held, b_wrote, a_wrote


@pytest.mark.parametrize("store", ["memory", "remote", "postgres"])
def test_a_paused_holder_is_refused_by_the_middleware(
    store: str,
    processes: Processes,
    tmp_path: Path,
    tenure_url: str,
    own_database_url: str,
) -> None:
    """Behind FencingMiddleware (memory, remote and postgres stores), B's write is accepted and
    the resumed A's write is answered 409 stale-generation; only B's payout exists."""
    with payments_service(own_database_url, fences=store, tenure_url=tenure_url) as payments:
        _, b_wrote, a_wrote = run_timeline(processes, tmp_path, "http", tenure_url, payments.url)
        written = httpx.get(f"{payments.url}/payouts", params={"day": DAY}, timeout=5).json()
    assert b_wrote["status"] == 201
    assert (a_wrote["status"], a_wrote["type"]) == (409, "/problems/stale-generation")
    assert [row["idempotency_key"] for row in written] == ["B"]
    assert f"close-day/{a_wrote['highest']}" == written[0]["fencing_token"]


async def _commissions(database_url: str) -> list[str]:
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT writer FROM commissions ORDER BY id")
    finally:
        await connection.close()
    return [row["writer"] for row in rows]


@pytest.fixture
async def commissions_table(database_url: str) -> str:
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(COMMISSIONS)
    finally:
        await connection.close()
    return database_url


async def test_a_paused_holder_is_refused_by_the_same_database_fence(
    processes: Processes, tmp_path: Path, tenure_url: str, commissions_table: str
) -> None:
    """Writing beside Tenure's tables in `fenced_transaction`, the resumed A finds its holding
    gone (LeaseLost) and writes nothing; only B's commission exists."""
    _, b_wrote, a_wrote = run_timeline(processes, tmp_path, "sql", tenure_url, commissions_table)
    assert b_wrote == {"written": True}
    assert (a_wrote["written"], a_wrote["error"]) == (False, "LeaseLost")
    assert await _commissions(commissions_table) == ["B"]


async def test_a_holder_paused_inside_its_fenced_transaction_cannot_commit(
    processes: Processes, tmp_path: Path, tenure_url: str, commissions_table: str
) -> None:
    """A stopped after its fence check, inside the transaction, holds the lease row only until
    the idle-in-transaction timeout ends its session; B then takes over and writes, and the
    resumed A's write fails on the closed session: only B's commission exists."""
    _, b_wrote, a_wrote = run_timeline(
        processes, tmp_path, "sql-inside", tenure_url, commissions_table
    )
    assert b_wrote == {"written": True}
    assert a_wrote["written"] is False
    assert await _commissions(commissions_table) == ["B"]
