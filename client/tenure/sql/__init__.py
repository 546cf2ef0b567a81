"""The SQL files shipped with the client, loaded into read-only mappings of named statements.

`fences.sql` holds the statements `tenure.pg` runs. A file is a series of `-- name: x` blocks;
each block's comment lists its parameters and says why it is safe under concurrency. Another
package reads its own files with the same loader: `load(filename, package)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import LiteralString, cast

__all__ = ["load", "parse"]

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


def load(filename: str, package: str = __name__) -> Mapping[str, LiteralString]:
    """The named statements of the `.sql` file `filename` in `package` (by default this one),
    read-only."""
    text = resources.files(package).joinpath(filename).read_text("utf-8")
    return MappingProxyType(parse(text))
