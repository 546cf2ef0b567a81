"""The commands the client tests run (`tenure run`'s children, the SDK worker, a schedule that
fired just now), and what the tests watch them with."""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tenure import resolve_window

PYTHON = sys.executable
# The SDK worker the tests start as processes of their own (`processes.python(WORKER, ...)`).
WORKER = Path(__file__).with_name("worker.py")
# How far behind the database's clock a host's clock runs in the clock-skew tests.
SKEW = timedelta(minutes=5)


def recent_daily_schedule() -> tuple[str, str, str]:
    """A daily UTC schedule that fired 2.5–3.5 minutes ago, its window key ("date") today by the
    real clock (the database's), and yesterday's, by a clock running SKEW behind."""
    now = datetime.now(UTC)
    fired = now - timedelta(minutes=2.5)
    cron = f"{fired.minute} {fired.hour} * * *"
    today = resolve_window(cron, "UTC", "date", now=now)
    yesterday = resolve_window(cron, "UTC", "date", now=now - SKEW)
    assert today != yesterday
    return cron, today, yesterday


# The command the tests run: writes its pid and TENURE_* environment to a file, optionally
# ignores SIGTERM or records it, then sleeps; exits with the given status.
CHILD = """
import json, os, signal, sys, time
out, sleep, code, on_term = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def term(signum, frame):
    with open(out + ".term", "w") as f:
        f.write("TERM")
    sys.exit(code)
if on_term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif on_term == "record":
    signal.signal(signal.SIGTERM, term)
env = {k: v for k, v in os.environ.items() if k.startswith("TENURE_")}
with open(out + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "env": env}, f)
os.rename(out + ".tmp", out)
time.sleep(sleep)
sys.exit(code)
"""


# A command that starts a grandchild in a session of its own (out of the command's process group,
# as a daemon does), writes both pids, optionally ignores SIGTERM, sleeps and exits 0.
ESCAPING = """
import json, os, signal, subprocess, sys, time
out, sleep, on_term = sys.argv[1], float(sys.argv[2]), sys.argv[3]
if on_term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
escapee = subprocess.Popen(sleeper, start_new_session=True)
with open(out + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "grandchild": escapee.pid}, f)
os.rename(out + ".tmp", out)
time.sleep(sleep)
"""


def child(out: Path, sleep: float = 0.0, code: int = 0, on_term: str = "default") -> list[str]:
    return [PYTHON, "-c", CHILD, str(out), str(sleep), str(code), on_term]


def escaping(out: Path, sleep: float = 0.0, on_term: str = "default") -> list[str]:
    return [PYTHON, "-c", ESCAPING, str(out), str(sleep), on_term]


def wait_for(path: Path, timeout: float = 15.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    facts: dict[str, object] = json.loads(path.read_text())
    return facts


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has ended; only its exit status is left to collect)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class DeathWatch:
    """The wall-clock time a process (not a child of this one) ended, seen through a pidfd: it
    turns readable when the process terminates, before anyone reaps it."""

    def __init__(self, pid: int) -> None:
        self._pidfd = os.pidfd_open(pid)
        self.died_at: float | None = None
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        readable, _, _ = select.select([self._pidfd], [], [], 30)
        if readable:
            self.died_at = time.time()
        os.close(self._pidfd)

    def wait(self) -> float:
        self._thread.join(35)
        assert self.died_at is not None, "the process did not end"
        return self.died_at
