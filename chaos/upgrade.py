"""The previous release (pinned in `chaos/previous_release`), read from git: its migrations, its
SQL statements, and a virtualenv of it built from a `git worktree`, so that its replicas can
serve beside the current ones (issue 27)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, LiteralString

from tests.support.processes import TENURE

from chaos.nemesis import Nemesis
from tenure.sql import parse
from tenure_server.db.migrate import Migration

ROOT = Path(__file__).resolve().parents[1]
PIN = Path(__file__).with_name("previous_release")
_MIGRATIONS = "service/tenure_server/db/migrations"
_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")


def previous_release() -> str:
    """The pinned commit."""
    lines = PIN.read_text("utf-8").splitlines()
    (commit,) = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return commit


def _git(*arguments: str) -> str:
    return subprocess.run(  # noqa: S603 - git, arguments built here
        ["git", "-C", str(ROOT), *arguments],  # noqa: S607 - git from PATH, as make and CI do
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def previous_migrations() -> list[Migration]:
    """The migrations the previous release shipped, as it shipped them."""
    found: list[Migration] = []
    for path in _git("ls-tree", "--name-only", f"{previous_release()}:{_MIGRATIONS}").split():
        match = _FILE.match(path)
        if match:
            text = _git("show", f"{previous_release()}:{_MIGRATIONS}/{path}")
            found.append(Migration(int(match["version"]), match["name"], text))
    return sorted(found, key=lambda migration: migration.version)


def previous_statements(filename: str) -> dict[str, LiteralString]:
    """The named statements of one of the previous release's SQL files (`leases.sql`)."""
    return parse(_git("show", f"{previous_release()}:service/tenure_server/db/sql/{filename}"))


def previous_tenure(cache: Path = ROOT / ".cache" / "previous-release") -> Path:
    """The previous release's `tenure` command, in a virtualenv of its own built once per pinned
    commit (from a `git worktree`, removed after) under the gitignored `cache`."""
    commit = previous_release()
    venv = cache / commit
    tenure = venv / "bin" / "tenure"
    if (venv / ".complete").exists():
        return tenure
    shutil.rmtree(venv, ignore_errors=True)
    source = Path(tempfile.mkdtemp(prefix="tenure-previous-")) / "source"
    _git("worktree", "add", "--detach", str(source), commit)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # noqa: S603
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
        subprocess.run([*pip, "install", "--quiet", f"{source}[server]"], check=True)  # noqa: S603
    finally:
        _git("worktree", "remove", "--force", str(source))
        shutil.rmtree(source.parent, ignore_errors=True)
    (venv / ".complete").touch()
    return tenure


# What a replica logs when the schema it meets is not the one its statements were written for
# (a function, column or table missing or changed, or its readiness check's refusal).
_SCHEMA_ERROR = re.compile(
    r"Undefined(?:Function|Column|Table|Object)Error|InvalidCachedStatementError"
    r"|DatatypeMismatchError|schema is behind"
)
# How long the migration step keeps trying `tenure migrate` while the database is away: a
# failover (F10) with its new standby's clone, a restart (F4) or a disturbed network (F5) may
# overlap it in a run with every fault.
_MIGRATE_PATIENCE = 60.0


@dataclass(frozen=True)
class Step:
    at: float  # a fraction of the run's duration
    action: Literal["migrate", "current", "previous"]
    replica: int | None = None


def steps(replicas: int) -> list[Step]:
    """The current migrations at 10 % of the run (under the previous release's replicas), each
    replica replaced by the current release between 20 and 45 %, and rolled back to the previous
    release (on the migrated schema) between 55 and 80 %."""
    plan = [Step(0.10, "migrate")]
    plan += [Step(0.20 + 0.25 * n / replicas, "current", n) for n in range(replicas)]
    plan += [Step(0.55 + 0.25 * n / replicas, "previous", n) for n in range(replicas)]
    return plan


class Rollout:
    """Drives the steps beside the nemesis, recorded as its faults are ("upgrade" start and
    heal, each followed by the liveness probe). A step may run while a fault is in progress;
    its heal is recorded, and probed, once none is (`Nemesis.quiet`)."""

    def __init__(self, nemesis: Nemesis, previous: Path) -> None:
        self.nemesis = nemesis
        self.previous = previous

    async def run(self, plan: list[Step], started: float, duration: float, bound: float) -> None:
        for step in plan:
            await asyncio.sleep(max(0.0, started + step.at * duration - time.monotonic()))
            detail = {"action": step.action, "replica": step.replica}
            self.nemesis.event("upgrade", "start", detail)
            if step.replica is None:
                await self._migrate()
            else:
                tenure = TENURE if step.action == "current" else self.previous
                await self.nemesis.targets.cluster.replace(step.replica, tenure)
            async with self.nemesis.quiet:  # a step may overlap a fault; its heal does not
                self.nemesis.event("upgrade", "heal", detail)
                self.nemesis.injected["upgrade"] = self.nemesis.injected.get("upgrade", 0) + 1
                await self.nemesis.probe(bound)

    async def _migrate(self) -> None:
        """`tenure migrate` of the current release, tried again while the database is away (a
        restart, a failover or the disturbed network may overlap it), for `_MIGRATE_PATIENCE`."""
        targets = self.nemesis.targets
        deadline = time.monotonic() + _MIGRATE_PATIENCE
        attempt = 0
        while True:
            process = targets.processes.start(
                f"migrate.{attempt}", [str(TENURE), "migrate"], targets.cluster.env
            )
            if await asyncio.to_thread(process.wait) == 0:
                return
            attempt += 1
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"tenure migrate failed {attempt} times in {_MIGRATE_PATIENCE:g} s "
                    "(logs/migrate.*.log)"
                )
            await asyncio.sleep(1.0)


def schema_refusals(run: Path) -> dict[str, int]:
    """The schema errors the replicas and migrations of a run logged, by kind."""
    found: Counter[str] = Counter()
    for log in sorted((run / "logs").glob("*.log")):
        if log.name.startswith(("service", "migrate")):
            found.update(_SCHEMA_ERROR.findall(log.read_text("utf-8", errors="replace")))
    return dict(sorted(found.items()))
