"""Start a Tenure service for a benchmark: `tenure serve` on a free loopback port, on the given
database URL or an embedded PostgreSQL in a fresh folder; stopped and cleaned up on exit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

TENURE = Path(sys.executable).parent / "tenure"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_service(*arguments: str, database_url: str | None = None) -> Iterator[str]:
    port = free_port()
    env = dict(
        os.environ, TENURE_LOG_LEVEL="warning", TENURE_DATA_DIR=tempfile.mkdtemp(prefix="tnb")
    )
    if database_url:
        env["TENURE_DATABASE_URL"] = database_url
    process = subprocess.Popen(
        [str(TENURE), "serve", "--port", str(port), *arguments], env=env, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the service did not become ready")
            time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
