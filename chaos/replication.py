"""The run's PostgreSQL: a primary and, with F10, a streaming standby; the floating addresses
that lead to whichever server is the primary; and the failover F10 performs.

    databases = Databases(run, standby=True, synchronous=True)
    service = databases.address(seed=1)     # a proxy that follows the primary (F5 disturbs it)
    await databases.start()                 # the primary, then a standby streaming from it
    databases.primary.url("tenure")         # straight to the primary (set-up, facts, probes)
    databases.link.blackhole(True)          # the standby receives nothing more
    killed, promoted = await databases.fail_over()
    await databases.add_standby()           # a new standby, cloned from the new primary
    databases.destroy()

**Synchronous** (`synchronous_standby_names = 'FIRST 1 (chaos_standby)'`, `synchronous_commit =
on`): a commit is acknowledged only once the standby has flushed it, so a failover loses nothing
acknowledged. **Asynchronous** (`synchronous_standby_names = ''`): a commit is acknowledged as soon
as the primary has flushed it; what the standby had not received when the primary died is lost.

The standby streams through a proxy of its own, `link`: black-holed, it holds the WAL in transit,
so the commits of the moment before a crash surely have not reached the standby (the way a slow
network or a busy standby leaves them behind, made certain).

**One standby at a time, a new one after each failover.** The old primary is stopped
(`immediate`, a crash) and retired, never started again: it is stale — with an asynchronous
standby it holds commits the new primary never saw, on a timeline the new primary forked from.
Retired servers are deleted with the rest at the end of the run (not on the failover's path).
`add_standby` clones a new standby from the new primary (`pg_basebackup`), with the same
application name, so a run can fail over any number of times. Until it streams, a synchronous
primary makes every commit wait (what docs/operations.md prescribes: 503s rather than double
grants); that wait is part of the time to the first acquire after a promotion.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

import asyncpg
from tests.support.processes import free_port

from chaos.database import EmbeddedPostgres
from chaos.proxy import Proxy

STANDBY_NAME = "chaos_standby"
STANDBY_TIMEOUT = 60.0
POLL_INTERVAL = 0.05
# Settings of a primary that has a standby (and of every standby: a clone copies them).
REPLICATION_SETTINGS = {
    # A standby reconnects within 0.2 s of a primary restart (F4), not the default 5 s, which a
    # synchronous primary's commits would all wait for.
    "wal_retrieve_retry_interval": "'200ms'",
    # WAL kept for a standby that fell behind (a stalled link), without a replication slot.
    "wal_keep_size": "'1GB'",
}
STREAMING = """
SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'
"""


class Databases:
    """The primary, its standby (if the run has one), and the proxies that follow the primary."""

    def __init__(
        self,
        run: Path,
        *,
        standby: bool,
        synchronous: bool,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.run = run
        self.environment = environment  # every server's (F11: the one clock they all read)
        self.primary = EmbeddedPostgres(free_port(), run / "pg", environment)
        self.standby: EmbeddedPostgres | None = None
        self.retired: list[EmbeddedPostgres] = []  # old primaries, stopped for good
        self.with_standby = standby
        self.synchronous = synchronous
        self.link = Proxy(self.primary.port)  # the standby's way to the primary (idle without)
        self.addresses: list[Proxy] = []
        self.servers = 1  # servers created so far: names their folders

    def address(self, seed: int = 0) -> Proxy:
        """A new floating address (started with the databases): a proxy to the primary."""
        proxy = Proxy(self.primary.port, seed=seed)
        self.addresses.append(proxy)
        return proxy

    @property
    def settings(self) -> dict[str, str]:
        """The primary's settings beyond the base ones (a standby's are a copy)."""
        if not self.with_standby:
            return {}
        names = f"'FIRST 1 ({STANDBY_NAME})'" if self.synchronous else "''"
        return {
            **REPLICATION_SETTINGS,
            "synchronous_commit": "on",
            "synchronous_standby_names": names,
        }

    async def start(self) -> None:
        """The primary, and its standby streaming: before any commit, which a synchronous
        primary would hold until a standby confirms it."""
        await asyncio.to_thread(self.primary.initialize, self.settings)
        await asyncio.to_thread(self.primary.start)
        for proxy in (self.link, *self.addresses):
            proxy.start()
        if self.with_standby:
            await self.add_standby()

    async def add_standby(self) -> None:
        """Clone a standby from the primary; return once it streams (synchronously if so set)."""
        self.standby = EmbeddedPostgres(
            free_port(), self.run / f"pg{self.servers}", self.environment
        )
        self.servers += 1
        await asyncio.to_thread(self.standby.clone, self.primary.port, self.link.port, STANDBY_NAME)
        await asyncio.to_thread(self.standby.start)
        wanted = "sync" if self.synchronous else "async"
        async with asyncio.timeout(STANDBY_TIMEOUT):
            while True:
                if await self._sync_state() == wanted:
                    return
                await asyncio.sleep(POLL_INTERVAL)

    async def _sync_state(self) -> str | None:
        connection = await asyncpg.connect(self.primary.url(), timeout=10)
        try:
            state: str | None = await connection.fetchval(STREAMING, STANDBY_NAME)
            return state
        finally:
            await connection.close()

    async def fail_over(self) -> tuple[float, float]:
        """Crash the primary, promote the standby and repoint every address to it; returns the
        instants (monotonic) of the crash and of the promotion."""
        standby, old = self.standby, self.primary
        if standby is None:
            raise RuntimeError("no standby to fail over to")
        await asyncio.to_thread(old.stop, "immediate")
        killed = time.monotonic()
        self.retired.append(old)
        await asyncio.to_thread(standby.promote)
        promoted = time.monotonic()
        self.primary, self.standby = standby, None
        for proxy in (self.link, *self.addresses):
            proxy.retarget(standby.port)
        self.link.heal()
        return killed, promoted

    def destroy(self) -> None:
        """Stop and delete every server, keeping its log in `<run>/logs/postgres.<folder>.log`,
        then stop the proxies (no connection left through them); never raises."""
        logs = self.run / "logs"
        for server in (self.standby, self.primary, *self.retired):
            if server is not None:
                with contextlib.suppress(OSError):
                    logs.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(server.log, logs / f"postgres.{server.root.name}.log")
                server.destroy()
        for proxy in (self.link, *self.addresses):
            with contextlib.suppress(Exception):
                proxy.heal()
                proxy.stop()
