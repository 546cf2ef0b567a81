"""`tenure status --watch` as a process against a running `tenure serve`: it prints the status,
then one line per event (an acquire done meanwhile), and exits 0 on Ctrl-C (SIGINT)."""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time

import pytest

from tenure import Tenure
from tests.support.processes import Processes, tenure_service

pytestmark = pytest.mark.slow

LINE_TIMEOUT = 20.0


class Lines:
    """A process's standard output, line by line, read by a thread (reads never block a test)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._process = process
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)

    def until(self, wanted: str) -> list[str]:
        """The lines read up to and including the first that contains `wanted`."""
        seen: list[str] = []
        deadline = time.monotonic() + LINE_TIMEOUT
        while not seen or wanted not in seen[-1]:
            seen.append(self._lines.get(timeout=max(0.0, deadline - time.monotonic())))
        return seen


def test_status_watch_prints_the_status_then_each_event(
    database_url: str, processes: Processes
) -> None:
    """The status table first (the stream is open by then), then the acquire's line with the
    lease, holder and generation; SIGINT ends it with exit status 0."""
    with tenure_service(database_url=database_url, output=subprocess.DEVNULL) as service:
        with Tenure(service.url, holder="worker-1") as client:
            client.acquire("before-watch", ttl=60)
            watch = processes.tenure("status", "--watch", "--url", service.url)
            lines = Lines(watch)
            status = "".join(lines.until("RECENT EVENTS"))
            assert "LEASES" in status
            assert "before-watch" in status
            lease = client.acquire("nightly", ttl=60)
            [*_, line] = lines.until("lease.acquired")
        assert line.split()[1:] == [
            "lease.acquired",
            "nightly",
            "holder",
            "worker-1",
            "generation",
            str(lease.generation),
        ]
        watch.send_signal(signal.SIGINT)
        assert watch.wait(10) == 0
