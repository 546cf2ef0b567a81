"""Every migration passes squawk, the PostgreSQL migration linter, with each accepted exception
written beside its statement (`-- squawk-ignore <rule>` and its reason); the configuration in
.squawk.toml turns off only what the runner does itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tenure_server.db.migrate import Migration, available

ROOT = Path(__file__).resolve().parents[2]
SQUAWK = Path(sys.executable).parent / "squawk"


def lint(migration: Migration) -> subprocess.CompletedProcess[str]:
    """squawk on one migration, told whether the runner wraps it in a transaction."""
    in_transaction = (
        "--assume-in-transaction" if migration.transactional else ("--no-assume-in-transaction")
    )
    return subprocess.run(
        [
            str(SQUAWK),
            "--config",
            str(ROOT / ".squawk.toml"),
            in_transaction,
            "--reporter",
            "gcc",
            "--stdin-filepath",
            f"{migration.version:04d}_{migration.name}.sql",
        ],
        input=migration.sql,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("migration", available(), ids=lambda migration: migration.name)
def test_each_migration_passes_the_linter(migration: Migration) -> None:
    """No finding of squawk's that the migration does not accept, beside the statement."""
    result = lint(migration)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_refuses_an_index_built_under_a_write_lock() -> None:
    """A plain CREATE INDEX on an existing table is a finding; CONCURRENTLY, in a no-transaction
    migration, is not (inside a transaction PostgreSQL itself refuses it)."""
    plain = Migration(9999, "probe", "CREATE INDEX leases_probe ON leases (holder);\n")
    assert "require-concurrent-index-creation" in lint(plain).stdout
    concurrent = "CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_probe ON leases (holder);\n"
    assert (
        lint(Migration(9999, "probe", "-- tenure: no-transaction\n" + concurrent)).returncode == 0
    )
