"""tests/README.md is the map of the tests and cannot rot: every path under tests/ it names exists,
every folder of tests/ has its row, and every test file is named in it, so a renamed, moved or new
file fails here until the map says where it is."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
MAP = TESTS / "README.md"
# A path under tests/ as the map writes it, in backticks: a file, or a folder ending in "/".
NAMED = re.compile(r"`(tests/[\w./-]+)`")
# A folder's row in the table of folders.
ROW = re.compile(r"^\| `tests/(\w+)/` \|", re.MULTILINE)


def named() -> set[str]:
    return set(NAMED.findall(MAP.read_text()))


def folders() -> set[str]:
    return {
        entry.name
        for entry in TESTS.iterdir()
        if entry.is_dir() and not entry.name.startswith((".", "_"))
    }


def test_every_path_the_map_names_exists() -> None:
    """A path in the map that is not in the repository (renamed, moved or mistyped) fails."""
    missing = sorted(path for path in named() if not (ROOT / path).exists())
    assert not missing, f"tests/README.md names paths that do not exist: {missing}"


def test_every_folder_has_its_row() -> None:
    """Each folder of tests/ is in the table of folders, and the table names no other."""
    rows = set(ROW.findall(MAP.read_text()))
    assert rows == folders(), (
        f"folders without a row: {sorted(folders() - rows)}; "
        f"rows of no folder: {sorted(rows - folders())}"
    )


def test_every_test_file_is_on_the_map() -> None:
    """A test file the map does not name is a behaviour a newcomer cannot find."""
    files = {path.relative_to(ROOT).as_posix() for path in TESTS.rglob("test_*.py")}
    unmapped = sorted(files - named())
    assert not unmapped, f"test files tests/README.md does not name: {unmapped}"


def test_the_map_reads_paths_as_this_test_does() -> None:
    """The patterns above find what the map writes: a file, a folder row."""
    assert NAMED.findall("see `tests/unit/test_domain.py` and `tests/api/`") == [
        "tests/unit/test_domain.py",
        "tests/api/",
    ]
    assert ROW.findall("| `tests/unit/` | nothing |\n| `tests/api/` | an app |") == ["unit", "api"]
