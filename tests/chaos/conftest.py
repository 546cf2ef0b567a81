"""Fixtures of the harness tests: a run folder, and after each test a check that no process
the harness started outlives it (any found is killed first, so a failing test cleans up too);
the previous release's command, built once per session."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos.upgrade import previous_tenure


def _children_and_mentions(marker: str) -> list[int]:
    """Live processes that are children of this one, or whose command line mentions `marker`
    (the embedded PostgreSQL, the workers: their arguments name the run folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, parent = stat[0], int(stat[1])
        if state != "Z" and (parent == os.getpid() or marker in command):
            found.append(int(entry.name))
    return found


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A run folder; after the test, no process of the run is left (else killed, and failed)."""
    run = tmp_path / "run"
    yield run
    left = _children_and_mentions(str(tmp_path))
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind: {left}"


@pytest.fixture(scope="session")
def previous_release_tenure() -> Path:
    """The previous release's `tenure` command, in its virtualenv built once (about 40 s the
    first time; cached under .cache/, gitignored)."""
    return previous_tenure()
