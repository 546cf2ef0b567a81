"""The command `tenure run` runs and every process it starts, stopped as one tree.

The command runs in a process group of its own, and signals go to the whole group. A descendant
that leaves the group (`setsid`, as a daemon does) is out of its reach; on Linux it is not out of
ours: `tenure run` is a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), so a descendant whose
parent ends is handed to `tenure run` instead of to init. Every child of `tenure run` other than
the command is therefore a descendant the command left behind: found in /proc by its parent pid,
signalled, and reaped, again and again until none remain (each one that ends hands its own
children up). On other platforms only the process group is reached.

This makes the whole process the command's supervisor: a process that uses `ProcessTree` must
start no other children (it is `tenure run`'s, nobody else's).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["ProcessTree", "children", "subreaper"]

# linux/prctl.h: descendants orphaned below this process are reparented to it, not to init.
PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """This process as the child subreaper of its descendants while the block runs (Linux);
    whether it is one."""
    if not sys.platform.startswith("linux") or not _set_subreaper(True):
        yield False
        return
    try:
        yield True
    finally:
        _set_subreaper(False)


def _set_subreaper(on: bool) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.restype = ctypes.c_int
    result: int = prctl(ctypes.c_int(PR_SET_CHILD_SUBREAPER), ctypes.c_ulong(int(on)))
    return result == 0


def children(parent: int) -> list[int]:
    """The processes whose parent is `parent`, from Linux's /proc (none elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # pid (comm) state ppid …; comm may contain spaces and parentheses.
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(stat.parent.name))
    return found


class ProcessTree:
    """The command, in its own process group, and the descendants it leaves to this process."""

    def __init__(self, command: Sequence[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(command, env=environment, process_group=0)  # noqa: S603 - running the given command is the point
        self._group = True  # the command's group may have members: it can be signalled
        self._unkillable: set[int] = set()  # left behind, but not ours to signal (setuid)

    @property
    def returncode(self) -> int | None:
        """The command's exit status once it has exited (negative: killed by that signal)."""
        return self.process.poll()

    def left_behind(self) -> list[int]:
        """The descendants handed to this process that are still running; the ones that ended
        are reaped on the way."""
        running = []
        for pid in children(os.getpid()):
            if pid == self.process.pid or pid in self._unkillable:
                continue  # the command is Popen's to reap
            with contextlib.suppress(ChildProcessError):  # reaped meanwhile
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    running.append(pid)
        return running

    def ended(self) -> bool:
        """True once the command, its process group and every descendant left have ended."""
        if self.returncode is None or self.left_behind():
            return False
        self._signal_group(0)  # probes: the group is gone once no member is left
        return not self._group

    def signal(self, signum: int) -> None:
        """`signum` to the command's process group and to every descendant it left behind."""
        self._signal_group(signum)
        for pid in self.left_behind():
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
            except PermissionError:
                self._unkillable.add(pid)

    def _signal_group(self, signum: int) -> None:
        if not self._group:
            return  # never again: its id may now be another process's
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            self._group = False

    def reap(self) -> None:
        """Reap the descendants handed to this process that ended while the command runs, so
        that a long run does not pile up zombies. One system call when there are none."""
        if not sys.platform.startswith("linux"):
            return  # no subreaper: the command is the only child (and macOS has no waitid)
        while True:
            try:
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if found is None or found.si_pid == self.process.pid:
                return  # none, or the command: Popen's to reap
            with contextlib.suppress(ChildProcessError):
                os.waitpid(found.si_pid, 0)
