"""CPU time of process trees, read from /proc/<pid>/stat (Linux): what a server spent serving a
measurement, including the backends PostgreSQL started and reaped during it."""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name: [state, ppid, …]."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rindex(")") + 2 :].split()


def parent_pid(pid: int) -> int | None:
    fields = _fields(pid)
    return int(fields[1]) if fields else None


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = parent_pid(int(entry.name))
            if parent is not None:
                tree.setdefault(parent, []).append(int(entry.name))
    return tree


def process_tree(root: int) -> list[int]:
    """The root and all its descendants now alive."""
    children = _children()
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def tree_cpu_seconds(root: int) -> float:
    """User + system time of the tree: live processes, plus the children each has reaped (a
    backend that exits moves its time into the postmaster's cutime/cstime, so differences of two
    readings count it exactly once)."""
    ticks = 0
    for pid in process_tree(root):
        fields = _fields(pid)
        if fields:
            # utime, stime, cutime, cstime are fields 14-17 of stat; 12-15 after the name.
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / CLOCK_TICKS


class CpuMeter:
    """Differences of CPU seconds of some process trees (None roots are skipped)."""

    def __init__(self, *roots: int | None) -> None:
        self._roots = [root for root in roots if root is not None]
        self._start = 0.0

    @property
    def active(self) -> bool:
        return bool(self._roots)

    def read(self) -> float:
        return sum(tree_cpu_seconds(root) for root in self._roots)

    def start(self) -> None:
        self._start = self.read()

    def elapsed(self) -> float:
        return self.read() - self._start
