"""Loads the named statements of `sql/queries.sql` into a read-only mapping."""

from __future__ import annotations

import re
from importlib import resources
from types import MappingProxyType
from typing import LiteralString, cast

_BLOCK = re.compile(r"^-- name: (?P<name>[a-z_]+)\n", re.MULTILINE)


def parse(text: str) -> dict[str, LiteralString]:
    """Split a file of `-- name: x` blocks into {name: statement}; names must be unique."""
    parts = _BLOCK.split(text)
    statements: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in statements:
            raise ValueError(f"query {name!r} is defined twice")
        # The text is our own packaged file, never user input.
        statements[name] = cast(LiteralString, body.strip().rstrip(";"))
    return statements


QUERIES = MappingProxyType(
    parse(resources.files("tenure_server.db.sql").joinpath("queries.sql").read_text("utf-8"))
)
