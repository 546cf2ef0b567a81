"""A throw-away `redis-server` for the SDK workload's comparison (sdk_cycles.py): Debian's
binary on a free loopback port, AOF on with the fsync policy asked for, its data in a temporary
folder, stopped and removed at the end."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.processes import free_port, stop

REDIS_SERVER = "/usr/bin/redis-server"
READY_TIMEOUT_SECONDS = 10.0


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server(appendfsync: str) -> Iterator[str]:
    """A redis:// URL of a fresh server with `appendonly yes` and `appendfsync` as given
    (`always`: each write fsynced before it is answered; `everysec`: once a second)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tnbredis") as folder:
        command = [
            REDIS_SERVER,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", folder,
            "--appendonly", "yes",
            "--appendfsync", appendfsync,
            "--save", "",
            "--logfile", "",
        ]  # fmt: skip
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            deadline = time.monotonic() + READY_TIMEOUT_SECONDS
            while not _answers_ping(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start (exit {process.poll()})")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            stop(process)
