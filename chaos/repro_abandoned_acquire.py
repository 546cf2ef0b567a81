"""Reproduction of a product safety bug found by the harness (issue 5, property 3), fixed in
commit 115e8eb; kept as a regression check (`tests/chaos/test_regressions.py`):

    python -m chaos.repro_abandoned_acquire        # exit 1: reproduced; 0: not reproduced

A waiting acquire whose client went away releases the holding it acquired
(`tenure_server/app/operations.py`, `Operations.acquire`: `if abandoned.is_set(): await
self.release(...)`). The release names the holding by (holder, generation) only, so when the same
holder's next request — the client's retry after its timeout — was granted that very holding in
between and answered 200, the abandoned request releases the holding the client was just told it
has. The client believes it holds the lease until send + TTL; another holder gets the next
generation at once.

Real processes: an embedded PostgreSQL and `tenure serve`. The row lock that makes both requests
wait together is what `tenure.pg.fenced_transaction` takes (FOR SHARE on the lease row); a paused
service replica (SIGSTOP) does the same in the harness (F2 with F9: the client times out against
the paused replica and retries on another one).

Two scenarios, run in turn (exit 1 if either reproduces):

- `retry race` (the original): the retry and the waiting acquire race once the lock is freed;
  it reproduces when the waiting acquire begins the holding and the retry's statement, whose
  now() is a few microseconds older, extends it after — `greatest()` then keeps the waiting
  acquire's expiry, so the guard "release only while its expiry is unchanged" still matches.
  Timing-dependent (about half of fresh runs on a 2-core machine).
- `shorter TTL` (deterministic): the same holder's second acquire asks for a shorter TTL than the
  abandoned waiting one and is queued behind it on the row lock. It is answered 200 for the same
  generation; `greatest()` leaves the expiry where the abandoned request set it; the abandoned
  request's guarded release matches and releases the holding the client was just told it has.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx
from tests.support.postgres import execute
from tests.support.processes import free_port

from chaos.cluster import Cluster, Processes, service_env
from chaos.database import EmbeddedPostgres

LEASE = "repro"


async def scenario(url: str, database_url: str, lease: str = LEASE) -> bool:
    """True if the holder was told it holds the lease and another holder got it anyway.

    The order of the two requests of H on the lease row's lock is the one of the harness's
    F2 + F9 run: the retry (on a live replica) is queued first, the abandoned waiting acquire
    (its replica was paused, its client timed out) second; queueing them on a row lock makes the
    interleaving deterministic."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        await http.post(f"/v1/leases/{lease}/acquire", json={"holder": "X", "ttl_seconds": 1.0})
        lock = await asyncpg.connect(database_url)
        transaction = lock.transaction()
        await transaction.start()  # X's fenced transaction: FOR SHARE on the lease row
        await lock.execute("SELECT 1 FROM leases WHERE name = $1 FOR SHARE", lease)
        sent = time.monotonic()
        retry = asyncio.create_task(  # H's retry: queued first on the row lock
            http.post(f"/v1/leases/{lease}/acquire", json={"holder": "H", "ttl_seconds": 5.0})
        )
        await asyncio.sleep(0.1)
        first = httpx.AsyncClient(base_url=url, timeout=10)
        waiting = asyncio.create_task(  # H's earlier waiting acquire, queued second
            first.post(
                f"/v1/leases/{lease}/acquire",
                json={"holder": "H", "ttl_seconds": 5.0, "wait_seconds": 10},
            )
        )
        await asyncio.sleep(0.2)
        waiting.cancel()  # its client has given up on it: the service sees the disconnect
        await first.aclose()
        await asyncio.sleep(0.8)  # X's TTL runs out while the lock is held
        await transaction.commit()
        await lock.close()
        told = await retry
        await asyncio.sleep(0.2)
        other = await http.post(
            f"/v1/leases/{lease}/acquire", json={"holder": "Y", "ttl_seconds": 5.0}
        )
        elapsed = time.monotonic() - sent
    print(f"H was told: {told.status_code} {told.json()}")
    print(
        f"Y, {elapsed:.2f} s after H's request (H believes it holds it for 5 s): "
        f"{other.status_code} {other.json()}"
    )
    return told.status_code == 200 and other.status_code == 200 and elapsed < 5.0


async def shorter_ttl(url: str, database_url: str, lease: str = f"{LEASE}-ttl") -> bool:
    """True if H, answered 200 for a 2 s acquire, is overtaken within those 2 s. X's holding has
    expired; a lock on its row queues H's waiting acquire (TTL 10 s) first and H's second acquire
    (TTL 2 s) second; the first caller goes away; the lock is released."""
    async with httpx.AsyncClient(base_url=url, timeout=20) as http:
        await http.post(f"/v1/leases/{lease}/acquire", json={"holder": "X", "ttl_seconds": 0.2})
        await asyncio.sleep(0.4)  # X's holding has expired; its row stays
        lock = await asyncpg.connect(database_url)
        transaction = lock.transaction()
        await transaction.start()
        await lock.execute("SELECT 1 FROM leases WHERE name = $1 FOR SHARE", lease)
        first = httpx.AsyncClient(base_url=url, timeout=20)
        body = {"holder": "H", "ttl_seconds": 10.0, "wait_seconds": 10}
        waiting = asyncio.create_task(first.post(f"/v1/leases/{lease}/acquire", json=body))
        await asyncio.sleep(0.2)
        sent = time.monotonic()
        again = asyncio.create_task(
            http.post(f"/v1/leases/{lease}/acquire", json={"holder": "H", "ttl_seconds": 2.0})
        )
        await asyncio.sleep(0.2)
        waiting.cancel()  # H's first caller gives up: the service sees the disconnect
        await first.aclose()
        await asyncio.sleep(0.3)
        await transaction.commit()
        await lock.close()
        told = await again
        await asyncio.sleep(0.1)
        other = await http.post(
            f"/v1/leases/{lease}/acquire", json={"holder": "Y", "ttl_seconds": 5.0}
        )
        elapsed = time.monotonic() - sent
    print(f"H (TTL 2 s) was told: {told.status_code} {told.json()}")
    print(f"Y, {elapsed:.2f} s after H's send: {other.status_code} {other.json()}")
    return told.status_code == 200 and other.status_code == 200 and elapsed < 2.0


async def reproduce(root: Path | None = None, rounds: int = 1) -> dict[str, bool]:
    """Run both scenarios `rounds` times (fresh leases) on one fresh database and service, in
    `root` (default: a new temporary folder); scenario name -> reproduced in any round. Every
    process started and the database are gone when it returns, however it ends."""
    root = root or Path(tempfile.mkdtemp(prefix="tnrepro"))
    processes = Processes(root / "logs")
    database = EmbeddedPostgres(free_port(), root / "pg")
    results = {"retry race": False, "shorter TTL": False}
    try:
        await asyncio.to_thread(database.initialize)
        await asyncio.to_thread(database.start)
        await execute(database.url(), "CREATE DATABASE tenure")
        env = service_env(database.url("tenure"), root / "service", {})
        cluster = Cluster(processes, 1, env)
        await cluster.start(0)
        url, tenure = cluster.urls[0], database.url("tenure")
        for round_ in range(rounds):
            results["retry race"] |= await scenario(url, tenure, f"{LEASE}-{round_}")
            results["shorter TTL"] |= await shorter_ttl(url, tenure, f"{LEASE}-ttl-{round_}")
    finally:
        await asyncio.to_thread(processes.kill_all)
        await asyncio.to_thread(database.destroy)
        shutil.rmtree(root, ignore_errors=True)
    return results


async def main() -> int:
    results = await reproduce()
    for name, reproduced in results.items():
        print(f"{name}: {'REPRODUCED' if reproduced else 'not reproduced'}")
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
