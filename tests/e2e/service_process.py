"""Run `tenure serve` as a real OS process on a free loopback port, and always clean it up."""

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


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tenure serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout} s")


@contextmanager
def tenure_serve(*arguments: str, **environment: str) -> Iterator[str]:
    """Start the service (embedded PostgreSQL in a fresh folder unless a URL is given); yields
    its base URL; stops it with SIGTERM like an orchestrator would."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="tnsv")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TENURE_") or key == "TENURE_TEST_DATABASE_URL"
    }
    env |= {"TENURE_DATA_DIR": data_dir, "TENURE_LOG_LEVEL": "warning", **environment}
    process = subprocess.Popen(
        [str(TENURE), "serve", "--port", str(port), *arguments],
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
