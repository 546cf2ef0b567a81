"""What each generator of one committed file does with what it rendered: write it, or with
`--check` say whether the committed copy is current (the tests run the check)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(target: Path, text: str, argv: list[str], remedy: str) -> int:
    if "--check" in argv:
        if target.read_text(encoding="utf-8") != text:
            print(f"{target} is out of date: run {remedy}", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    return 0
