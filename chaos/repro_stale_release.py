"""Reproduction of a product safety bug found by the long run (issue 5, property 3), fixed since
(commit 38156e3; the grant made mandatory in 17d586f), kept as a regression check:

    python -m chaos.repro_stale_release        # exit 1: reproduced; 0: not reproduced

**A release sent before the same holder's re-acquire, but executed after it, released the
holding that re-acquire had just been granted.** The release endpoint named the holding by
(name, holder, generation) only. A holder that acquires a lease it still holds is answered 200
with the *same* generation and a fresh expiry, so an older release of that holder still matched
and ended the holding the client was just told it has: the client believed it held the lease
until send + TTL, and another holder was granted the next generation at once.

Reachable with the SDK alone: a release times out client-side (its replica is paused — F2 —,
or the network is slow), the application acquires the lease again through another replica (the
holder id is the client's, so it is the same holder) and is answered 200; then the paused
replica resumes and executes the stale release. The long run (`--faults all --seed 7`) hit it
on the window lease: win0's release of generation 3438 timed out on paused replica 0, win0
re-acquired 3438 on replica 1 (told: valid 1.2 s), replica 0 resumed and released it, win3 was
granted 3439 0.24 s before win0's belief ended (its fenced completion was refused, as it should
be; an unfenced side effect would not have been).

The fix: every acquire and renew answer carries `grant` (the transaction id stamped in
`leases.granted_xact`), and a release names the grant it ends; one naming an older grant ends
nothing (409 lease-lost). The release below names the grant of H's first acquire, which H's
re-acquire has replaced, so it must end nothing.

Real processes: an embedded PostgreSQL and two `tenure serve` replicas; replica 0 is paused with
SIGSTOP (the kernel still accepts the connection and buffers the request), which makes the
interleaving deterministic. Two scenarios (exit 1 if either reproduces):

- `release timed out`: the client gives up on the release after 0.5 s (as the SDK's timeout
  does) and closes its connection, then re-acquires on replica 1.
- `release in flight`: the same, with the release's connection left open.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tests.support.postgres import execute
from tests.support.processes import free_port

from chaos.cluster import Cluster, Processes, service_env
from chaos.database import EmbeddedPostgres

TTL = 5.0
CLIENT_TIMEOUT = 0.5


async def scenario(cluster: Cluster, lease: str, *, give_up: bool) -> bool:
    """True if H, answered 200 for a TTL-second holding, is overtaken by Y within it."""
    paused, live = cluster.urls
    async with httpx.AsyncClient(base_url=live, timeout=10) as http:
        first = await http.post(
            f"/v1/leases/{lease}/acquire", json={"holder": "H", "ttl_seconds": TTL}
        )
        generation, grant = first.json()["generation"], first.json()["grant"]
        cluster.signal(0, signal.SIGSTOP)  # replica 0 stops answering (F2)
        stale = httpx.AsyncClient(base_url=paused, timeout=10)
        # The release names the grant it ends, as the SDK's lease handles do.
        body = {"holder": "H", "generation": generation, "grant": grant}
        release = asyncio.create_task(stale.post(f"/v1/leases/{lease}/release", json=body))
        await asyncio.sleep(CLIENT_TIMEOUT)  # no answer: the client's timeout
        if give_up:
            release.cancel()
            await stale.aclose()
        sent = time.monotonic()
        told = await http.post(  # H acquires again, through the live replica
            f"/v1/leases/{lease}/acquire", json={"holder": "H", "ttl_seconds": TTL}
        )
        cluster.signal(0, signal.SIGCONT)  # replica 0 resumes and runs the stale release
        if not give_up:
            with contextlib.suppress(httpx.HTTPError):
                await release
            await stale.aclose()
        await asyncio.sleep(0.5)
        other = await http.post(
            f"/v1/leases/{lease}/acquire", json={"holder": "Y", "ttl_seconds": TTL}
        )
        elapsed = time.monotonic() - sent
    print(f"H was told: {told.status_code} {told.json()}")
    print(f"Y, {elapsed:.2f} s after H's send: {other.status_code} {other.json()}")
    return told.status_code == 200 and other.status_code == 200 and elapsed < TTL


async def reproduce(root: Path | None = None) -> dict[str, bool]:
    """Run both scenarios on a fresh database and two replicas; scenario -> reproduced. Every
    process started and the database are gone when it returns, however it ends."""
    root = root or Path(tempfile.mkdtemp(prefix="tnrepro"))
    processes = Processes(root / "logs")
    database = EmbeddedPostgres(free_port(), root / "pg")
    try:
        await asyncio.to_thread(database.initialize)
        await asyncio.to_thread(database.start)
        await execute(database.url(), "CREATE DATABASE tenure")
        cluster = Cluster(processes, 2, service_env(database.url("tenure"), root / "svc", {}))
        await cluster.start(0)
        await cluster.start(1)
        try:
            return {
                "release timed out": await scenario(cluster, "stale-1", give_up=True),
                "release in flight": await scenario(cluster, "stale-2", give_up=False),
            }
        finally:
            cluster.signal(0, signal.SIGCONT)
    finally:
        await asyncio.to_thread(processes.kill_all)
        await asyncio.to_thread(database.destroy)
        shutil.rmtree(root, ignore_errors=True)


async def main() -> int:
    results = await reproduce()
    for name, reproduced in results.items():
        print(f"{name}: {'REPRODUCED' if reproduced else 'not reproduced'}")
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
