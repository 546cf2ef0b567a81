"""The one launcher of real processes in tests, chaos and bench.

HTTP servers: `tenure serve` (or any command that serves HTTP) on a free loopback port with the
environment given, ready once a GET answers 200, stopped as an orchestrator stops it (SIGTERM,
then SIGKILL to its process group if it lingers).

    with tenure_service("--workers", "2", database_url=url) as service:         # tests, bench
        httpx.get(f"{service.url}/healthz")
    with running(command, port, env=env, output=log) as server: ...              # any server
    wait_ready(f"{url}/readyz", process)                                         # chaos's own

Other commands a test starts and watches (`tenure run`, `tenure status --watch`, the client and
fencing workers, the examples): `Processes` (the `processes` fixture of tests/conftest.py), which
kills whatever is still running when the test ends.

    processes.tenure("run", "job", "--url", url, "--", *command)
    processes.python(WORKER, "hold", url, "job", "5")
"""

from __future__ import annotations

import contextlib
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
from typing import IO, Any

import httpx

# children(pid): the processes whose parent is pid (Linux /proc: each PostgreSQL backend has a
# session of its own, so a process group would not reach them; uvicorn's workers are its
# children). The same lookup `tenure run` finds what a command left behind with.
from tenure._process_tree import children as children

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TENURE = BIN / "tenure"
READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0
POLL_SECONDS = 0.05
# Where the tests are told which PostgreSQL to use (tests/support/postgres.py).
TEST_DATABASE_URL = "TENURE_TEST_DATABASE_URL"


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def tenure_command(port: int, *arguments: str, tenure: Path = TENURE) -> list[str]:
    """`tenure serve` on `port`; `tenure`: another release's command (chaos.upgrade)."""
    return [str(tenure), "serve", "--port", str(port), *arguments]


def without_tenure_settings(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment (default: this process's) without its TENURE_* settings, so that a
    service started with it has only the settings its caller gives."""
    given = os.environ if environment is None else environment
    return {key: value for key, value in given.items() if not key.startswith("TENURE_")}


def wait_ready(
    url: str, process: subprocess.Popen[Any], timeout: float = READY_TIMEOUT_SECONDS
) -> None:
    """Return once GET `url` answers 200; fail if the process exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"{process.args!r}: {url} not ready after {timeout} s")


@dataclass(frozen=True)
class Server:
    url: str
    port: int
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        """The supervisor's; with several workers, they are its children."""
        return self.process.pid


def stop(process: subprocess.Popen[Any], timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """SIGTERM, and SIGKILL to the process group of what has not exited in time."""
    process.send_signal(signal.SIGTERM)  # nothing happens if it has exited already
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def running(
    command: Sequence[str],
    port: int,
    *,
    env: Mapping[str, str],
    output: IO[bytes] | int | None = None,
    ready_path: str = "/readyz",
    ready_timeout: float = READY_TIMEOUT_SECONDS,
    cwd: Path | None = None,
) -> Iterator[Server]:
    """Run `command` (which must listen on 127.0.0.1:`port`) in a session of its own, in `cwd`
    (default: this process's), until the block ends. Its output goes to `output` (a file,
    `subprocess.DEVNULL`; default: this process's own)."""
    process = subprocess.Popen(
        list(command), env=dict(env), cwd=cwd, start_new_session=True, stdout=output, stderr=output
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + ready_path, process, ready_timeout)
        yield Server(url, port, process)
    finally:
        stop(process)


@contextmanager
def tenure_service(
    *arguments: str,
    database_url: str | None = None,
    output: IO[bytes] | int | None = None,
    **settings: str,
) -> Iterator[Server]:
    """`tenure serve *arguments` on a free port, on the database at `database_url` or else an
    embedded PostgreSQL in a fresh folder (removed afterwards), with warnings only in its log
    and these TENURE_* settings, none of this process's."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tnsv", ignore_cleanup_errors=True) as folder:
        env = without_tenure_settings()
        env |= {"TENURE_DATA_DIR": folder, "TENURE_LOG_LEVEL": "warning", **settings}
        if database_url:
            env["TENURE_DATABASE_URL"] = database_url
        with running(tenure_command(port, *arguments), port, env=env, output=output) as server:
            yield server


def _interruptible() -> None:
    """SIGINT as a terminal gives it: a test launched in the background (`&` without job control)
    inherits SIGINT ignored, and Python then never raises KeyboardInterrupt in the process."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Processes:
    """Processes a test starts, in the repository's root with it on PYTHONPATH, their output
    piped as text; any still running at the end are killed (by their own pid)."""

    def __init__(self) -> None:
        self._started: list[subprocess.Popen[str]] = []

    def start(self, *arguments: str) -> subprocess.Popen[str]:
        """`arguments` run with this process's environment (a test's TENURE_URL reaches it) but
        not the suite's own TENURE_TEST_DATABASE_URL, which no command reads (`tenure run`
        hands its TENURE_* on to the command it runs, and the tests check exactly which)."""
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        environment.pop(TEST_DATABASE_URL, None)
        process: subprocess.Popen[str] = subprocess.Popen(
            list(arguments),
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_interruptible,
        )
        self._started.append(process)
        return process

    def python(self, script: Path, *arguments: str) -> subprocess.Popen[str]:
        """`script` run by this interpreter."""
        return self.start(sys.executable, str(script), *arguments)

    def tenure(self, *arguments: str) -> subprocess.Popen[str]:
        return self.start(str(TENURE), *arguments)

    def close(self) -> None:
        for process in self._started:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGCONT)
                    process.kill()
            process.communicate(timeout=10)
