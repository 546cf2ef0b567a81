"""The service's SQL files: leases, windows and fences (one per aggregate), jobs, monitoring,
health, operator commands and the migration runner. Read with the client's public parser
(`tenure.sql`), so that one loader reads every `-- name:` block of the project."""

from __future__ import annotations

from collections.abc import Mapping
from typing import LiteralString

from tenure import sql


def load(filename: str) -> Mapping[str, LiteralString]:
    """The named statements of one of this package's files, read-only."""
    return sql.load(filename, __name__)
