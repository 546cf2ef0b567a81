"""What a new user meets when `tenure serve` and `tenure migrate` start, as real processes: a
mistake is one line naming what to fix, with a documented exit status, never a traceback; a
terminal gets readable lines, and the embedded database says what it did in one."""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import tempfile
import threading
from collections.abc import Mapping

import pytest

from tenure.commands import EXIT_DATABASE_UNREACHABLE, EXIT_NOT_LISTENING
from tests.support.postgres import with_database
from tests.support.processes import TENURE, free_port, running, tenure_command
from tests.support.processes import without_tenure_settings as clean_environment

pytestmark = pytest.mark.slow


def tenure(*arguments: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """`tenure ARGUMENTS` with only these TENURE_* settings, to its end."""
    return subprocess.run(
        [str(TENURE), *arguments],
        env=clean_environment() | settings,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The only line the command wrote, on stderr."""
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def refused_url() -> str:
    return f"postgresql://app:hunter2@127.0.0.1:{free_port()}/tenure"


def test_migrate_to_a_database_nobody_serves_is_one_line() -> None:
    """`tenure migrate` with a URL where nothing listens: the host, port, database and user and
    "connection refused" in one line, exit 69, no password, no traceback."""
    url = refused_url()
    done = tenure("migrate", TENURE_DATABASE_URL=url)
    assert done.returncode == EXIT_DATABASE_UNREACHABLE
    line = one_line(done)
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert line.startswith(
        f'tenure migrate: cannot connect to database "tenure" on 127.0.0.1:{port}'
    )
    assert "connection refused" in line
    assert "hunter2" not in line


def test_migrate_to_a_missing_database_says_so(server_url: str) -> None:
    """On a real server, a database that does not exist is named as such."""
    done = tenure("migrate", TENURE_DATABASE_URL=with_database(server_url, "tenure_no_such"))
    assert done.returncode == EXIT_DATABASE_UNREACHABLE
    line = one_line(done)
    assert 'database "tenure_no_such"' in line
    assert "no such database" in line


def test_migrate_runs_whatever_the_listening_address(database_url: str) -> None:
    """`tenure migrate` never listens: the image's TENURE_HOST=0.0.0.0 without tokens is no
    reason to refuse it."""
    done = tenure("migrate", TENURE_DATABASE_URL=database_url, TENURE_HOST="0.0.0.0")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "applied: nothing to do\n"


def test_serve_does_not_say_it_listens_before_the_database_answered() -> None:
    """`tenure serve` on an unreachable database: one line and exit 69, no "listening"."""
    done = tenure("serve", "--port", str(free_port()), TENURE_DATABASE_URL=refused_url())
    assert done.returncode == EXIT_DATABASE_UNREACHABLE
    assert "connection refused" in one_line(done)
    assert "listening" not in done.stderr


def test_serve_beyond_loopback_without_tokens_names_the_option_typed() -> None:
    """`--host 0.0.0.0` without authentication: the refusal names `--host` as typed and what to
    set, without pydantic's prefixes."""
    done = tenure("serve", "--host", "0.0.0.0", TENURE_DATABASE_URL=refused_url())
    assert done.returncode == 1
    line = one_line(done)
    assert line.startswith("tenure serve: --host 0.0.0.0 without authentication")
    assert "TENURE_TOKENS_FILE" in line
    assert "TENURE_?" not in line
    assert "Value error" not in line


def test_serve_on_a_taken_port_is_one_line(database_url: str) -> None:
    """Another process listens on the port: exit 3 with the address and the reason, before
    anything said it listens."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = tenure("serve", "--port", str(port), TENURE_DATABASE_URL=database_url)
    assert done.returncode == EXIT_NOT_LISTENING
    lines = [line for line in done.stderr.splitlines() if "cannot listen" in line]
    assert lines == [
        f"tenure serve: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another tenure serve? choose another port: --port or TENURE_PORT)"
    ]
    assert "Tenure listening" not in done.stderr


def read_all(fd: int, into: list[bytes]) -> threading.Thread:
    """Read `fd` (a pty's master side) until its other side is closed, in a thread: a pty's
    buffer is small, and a writer that fills it would block."""

    def read() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: every process holding the other side has exited
                return
            if not chunk:
                return
            into.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def serve_on_a_terminal(env: Mapping[str, str]) -> str:
    """`tenure serve` with its output on a terminal (a pty), until ready and stopped; what it
    wrote."""
    master, terminal = pty.openpty()
    chunks: list[bytes] = []
    reader = read_all(master, chunks)
    port = free_port()
    try:
        with running(tenure_command(port), port, env=env, output=terminal):
            pass
    finally:
        os.close(terminal)
        reader.join(timeout=10)
        os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_first_start_on_a_terminal_reads_as_text() -> None:
    """A fresh embedded database, stderr a terminal, no XDG_RUNTIME_DIR: readable lines, not
    JSON; one line says what the embedded PostgreSQL did (no initdb output); no warning."""
    with tempfile.TemporaryDirectory(prefix="tnft", ignore_cleanup_errors=True) as folder:
        env = clean_environment() | {"TENURE_DATA_DIR": f"{folder}/pgdata"}
        env.pop("XDG_RUNTIME_DIR", None)
        output = serve_on_a_terminal(env)
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines, "tenure serve wrote nothing"
    assert not [line for line in lines if line.lstrip().startswith("{")], output
    assert "Warning" not in output
    embedded = [line for line in lines if "PostgreSQL" in line]
    assert len(embedded) == 1, output
    assert "INFO" in embedded[0]
    assert f"created and started in {folder}/pgdata" in embedded[0]
    assert "initdb" not in output
    listening = next(i for i, line in enumerate(lines) if "Tenure listening on http" in line)
    assert listening > lines.index(embedded[0])
