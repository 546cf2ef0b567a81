"""The previous release (pinned in `chaos/previous_release`), read from git: its migrations, its
SQL statements, and a virtualenv of it built from a `git worktree`, so that its replicas can
serve beside the current ones (issue 27)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import LiteralString

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
