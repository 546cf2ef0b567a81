"""Start the servers of a benchmark on free loopback ports and stop them on exit: the Tenure
service (`tenure serve`, on the given database URL or an embedded PostgreSQL in a fresh folder)
and any other command that serves HTTP (the naive baseline under uvicorn)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

BIN = Path(sys.executable).parent
TENURE = BIN / "tenure"
READY_TIMEOUT_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Server:
    url: str
    port: int
    pid: int  # the supervisor; its workers are its children


def _wait_ready(process: subprocess.Popen[bytes], ready_url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while True:
        try:
            if httpx.get(ready_url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError(f"{process.args!r} did not become ready (see its log)")
        time.sleep(0.1)


@contextmanager
def running_server(
    command: Sequence[str],
    port: int,
    *,
    env: Mapping[str, str],
    log: IO[bytes] | None = None,
    ready_path: str = "/readyz",
) -> Iterator[Server]:
    """Run `command` (which must listen on 127.0.0.1:`port`) until the block ends; its output
    goes to `log` (default: discarded, so that request logs cost the service what they cost
    in production, not the disk)."""
    process = subprocess.Popen(
        list(command),
        env=dict(env),
        start_new_session=True,
        stdout=log or subprocess.DEVNULL,
        stderr=log or subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url + ready_path)
        yield Server(url, port, process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def tenure_command(port: int, *arguments: str) -> list[str]:
    return [str(TENURE), "serve", "--port", str(port), *arguments]


def tenure_env(database_url: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    return dict(os.environ, TENURE_DATABASE_URL=database_url, **(overrides or {}))


@contextmanager
def running_service(*arguments: str, database_url: str | None = None) -> Iterator[str]:
    """`tenure serve *arguments` with warnings only in its log, on the given database or an
    embedded PostgreSQL in a fresh folder (removed afterwards); yields its base URL."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tnb", ignore_cleanup_errors=True) as folder:
        env = dict(os.environ, TENURE_LOG_LEVEL="warning", TENURE_DATA_DIR=folder)
        if database_url:
            env["TENURE_DATABASE_URL"] = database_url
        with running_server(tenure_command(port, *arguments), port, env=env) as server:
            yield server.url
