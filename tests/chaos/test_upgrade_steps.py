"""The pieces of the rolling-upgrade run that need no processes: the pin, the plan of steps, and
the log scan that counts schema refusals."""

from __future__ import annotations

import subprocess
from pathlib import Path

from chaos.upgrade import ROOT, previous_migrations, previous_release, schema_refusals, steps

from tenure_server.db.migrate import available


def test_the_pin_is_one_commit_older_than_the_current_migrations() -> None:
    """chaos/previous_release names a commit git knows, whose migrations are a prefix of the
    current ones (migrations only add), so an upgrade from it applies the rest."""
    commit = previous_release()
    resolved = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert resolved == commit
    previous = [(m.version, m.name) for m in previous_migrations()]
    assert previous == [(m.version, m.name) for m in available()][: len(previous)]
    assert len(previous) < len(available())


def test_every_replica_is_upgraded_then_rolled_back_after_the_migration() -> None:
    """Migrate first; each replica to the current release, then each back, in time order."""
    plan = steps(3)
    assert [(s.action, s.replica) for s in plan] == [
        ("migrate", None),
        *[("current", n) for n in range(3)],
        *[("previous", n) for n in range(3)],
    ]
    assert [s.at for s in plan] == sorted(s.at for s in plan)
    assert plan[-1].at < 0.85  # room left for the final checks


def test_a_schema_error_in_a_replica_log_is_counted(tmp_path: Path) -> None:
    """What a replica logs when its statements meet a schema they were not written for."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "service1.2.log").write_text(
        "asyncpg.exceptions.UndefinedFunctionError: function tenure_may_acquire_v3 does not "
        "exist\nGET /readyz 503 database schema is behind this version\n",
        encoding="utf-8",
    )
    (logs / "w00.log").write_text("UndefinedColumnError in a worker is not a replica's\n")
    assert schema_refusals(tmp_path) == {"UndefinedFunctionError": 1, "schema is behind": 1}
