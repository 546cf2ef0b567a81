"""A job process for the seed's timeline: acquire, say so, wait for a go signal, then write.

worker.py http TENURE_URL LEASE TTL WAIT GO_FILE WRITER PAYMENTS_URL
    POST PAYMENTS_URL/payouts (the payments example) with the holding's Fencing-Token, a payout
    of day DAY whose Idempotency-Key is WRITER.
worker.py sql TENURE_URL LEASE TTL WAIT GO_FILE WRITER DATABASE_URL
    in `fenced_transaction` on Tenure's own database, INSERT a commission row.
worker.py sql-inside TENURE_URL LEASE TTL WAIT GO_FILE WRITER DATABASE_URL
    open `fenced_transaction` first, then wait for the go signal inside it, then INSERT.

Each prints JSON lines: {"generation": n} once the lease is held (and, for sql-inside, the
fence checked), then the outcome of the write. The test stops the process (SIGSTOP) after the
first line; the go signal is GO_FILE appearing, which the process can only see once resumed.
Nothing here renews the lease or checks it locally: a paused process does neither.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import asyncpg
import httpx

from tenure import AsyncTenure, LeaseLost
from tenure.pg import fenced_transaction

INSERT = "INSERT INTO commissions (writer, generation) VALUES ($1, $2)"
DAY = "2026-09-25"  # the business day every payout is for


def say(**facts: object) -> None:
    print(json.dumps(facts), flush=True)


def go(path: Path) -> None:
    """Block until `path` exists (the loop has nothing else to do meanwhile)."""
    while not path.exists():
        time.sleep(0.02)


async def http_write(lease: str, generation: int, writer: str, payments_url: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(
            f"{payments_url}/payouts",
            json={"store": 1, "day": DAY, "amount_cents": 100},
            headers={"Fencing-Token": f"{lease}/{generation}", "Idempotency-Key": writer},
        )
    body = response.json()
    say(status=response.status_code, type=body.get("type"), highest=body.get("highest"))


async def sql_write(
    lease: str, holder: str, generation: int, writer: str, database_url: str
) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        async with fenced_transaction(connection, lease, holder, generation) as fenced:
            await fenced.execute(INSERT, writer, generation)
        say(written=True)
    except LeaseLost as error:
        say(written=False, error="LeaseLost", detail=error.detail)
    finally:
        await connection.close()


async def sql_inside(
    lease: str, holder: str, generation: int, writer: str, database_url: str, signal: Path
) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        async with fenced_transaction(connection, lease, holder, generation, idle_timeout=1):
            say(generation=generation)
            go(signal)
            await connection.execute(INSERT, writer, generation)
        say(written=True)
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as error:
        say(written=False, error=type(error).__name__, detail=str(error))
    finally:
        await connection.close(timeout=2)


async def main(
    mode: str, url: str, lease: str, ttl: str, wait: str, signal: str, writer: str, target: str
) -> None:
    async with AsyncTenure(url) as client:
        held = await client.acquire(lease, float(ttl), wait=float(wait))
        if mode == "sql-inside":
            await sql_inside(lease, client.holder, held.generation, writer, target, Path(signal))
            return
        say(generation=held.generation)
        go(Path(signal))
        if mode == "http":
            await http_write(lease, held.generation, writer, target)
        elif mode == "sql":
            await sql_write(lease, client.holder, held.generation, writer, target)
        else:
            sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
