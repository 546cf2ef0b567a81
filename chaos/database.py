"""The harness's own PostgreSQL: pgserver's binaries in a fresh data folder, on a loopback port,
that the nemesis can stop (`fast` or `immediate`) and start again — or clone as a streaming
standby (`pg_basebackup`) and promote (`chaos.replication` puts the two together).

pgserver itself starts a server on a unix socket and stops it when the last process using it
exits; the harness needs a TCP port (the service reaches the database through `chaos.proxy`) and
restarts under its own control, so it drives `initdb` and `pg_ctl` from `pgserver`'s folder
directly (`tests.support.postgres.program`). As root, like pgserver, it runs them as the
`pgserver` system user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import asyncpg
from tests.support import postgres

StopMode = Literal["fast", "immediate"]
SYSTEM_USER = "pgserver"
PG_CTL_TIMEOUT = 60.0
# Settings of every run. track_commit_timestamp gives each fenced row its commit instant, the
# order property 4 checks; max_connections covers 32 workers, three replicas and the storm.
BASE_SETTINGS: Mapping[str, str] = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "max_connections": "400",
    "track_commit_timestamp": "on",
    "shared_buffers": "128MB",
    "logging_collector": "off",
    "log_min_messages": "warning",
}
# What the report shows as "the database settings in effect".
REPORTED_SETTINGS = (
    "server_version",
    "synchronous_commit",
    "synchronous_standby_names",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_writer_delay",
    "track_commit_timestamp",
    "max_connections",
    "default_transaction_isolation",
)


def _as_system_user() -> tuple[str | None, Path | None]:
    """The user to run the server as (None: this one), and that user's home for pgserver."""
    if os.geteuid() != 0:
        return None, None
    try:
        entry = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        # A fixed argument list, as pgserver itself does it (pgserver.utils.ensure_user_exists).
        subprocess.run(  # noqa: S603
            ["/usr/sbin/useradd", "-s", "/bin/bash", SYSTEM_USER], check=True, timeout=30
        )
        entry = pwd.getpwnam(SYSTEM_USER)
    return SYSTEM_USER, Path(entry.pw_dir)


def url_of(port: int, database: str = "postgres") -> str:
    """The URL of `database` on a server (or a proxy in front of one) on 127.0.0.1:`port`."""
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


class EmbeddedPostgres:
    """One PostgreSQL server in `root/data`, on 127.0.0.1:`port`."""

    def __init__(
        self, port: int, root: Path | None = None, environment: Mapping[str, str] | None = None
    ) -> None:
        self.environment = dict(environment or {})  # the server's own (libfaketime, F11)
        self.root = root or Path(tempfile.mkdtemp(prefix="tnchaos"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = port
        self.user, _ = _as_system_user()

    def url(self, database: str = "postgres") -> str:
        return url_of(self.port, database)

    def _run(
        self,
        program: str,
        *arguments: str,
        timeout: float = PG_CTL_TIMEOUT,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        """Run one of pgserver's programs; its error output is in the exception if it fails."""
        self._reach()
        env = {**os.environ, **environment} if environment else None
        command = [str(postgres.program(program)), *arguments]
        try:
            subprocess.run(  # noqa: S603 - pgserver's own binaries, arguments built here
                command,
                check=True,
                user=self.user,
                timeout=timeout,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        except subprocess.CalledProcessError as error:
            said = (error.stderr or b"").decode(errors="replace").strip()
            failed = f"{program} {' '.join(arguments)}: exit {error.returncode}"
            raise RuntimeError(f"{failed}: {said}") from error

    def _own_root(self) -> None:
        """Give the root folder to the server's user."""
        if self.user is not None:
            shutil.chown(self.root, self.user)
            self.root.chmod(0o755)

    def _reach(self) -> None:
        """Let the server's user reach its folder. Done again before each program: a pytest
        session that starts meanwhile puts its base folder (/tmp/pytest-of-<user>) back to 0700."""
        if self.user is not None:
            for parent in self.root.parents:
                parent.chmod(parent.stat().st_mode | 0o055)

    def _configure(self, settings: Mapping[str, str]) -> None:
        """Append settings to the server's config (a later line wins over an earlier one)."""
        lines = "".join(f"{key} = {value}\n" for key, value in settings.items())
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as config:
            config.write(f"\n# chaos harness\n{lines}")

    def initialize(self, settings: Mapping[str, str] | None = None) -> None:
        """initdb, then write the settings (BASE_SETTINGS, then `settings`) to its config."""
        self._own_root()
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "-E", "utf8")
        self._configure({"port": str(self.port), **BASE_SETTINGS, **(settings or {})})

    def clone(self, source_port: int, upstream_port: int, name: str) -> None:
        """Become a standby of the server on `source_port`: a base backup of it, streaming from
        then on through `upstream_port` (the address that follows the primary) as `name`, the
        application name `synchronous_standby_names` refers to. Its settings are the source's."""
        self._own_root()
        self._run(
            "pg_basebackup",
            *("-h", "127.0.0.1", "-p", str(source_port), "-U", "postgres"),
            *("-D", str(self.data), "-X", "stream", "-c", "fast"),
        )
        conninfo = f"host=127.0.0.1 port={upstream_port} user=postgres application_name={name}"
        self._configure({"port": str(self.port), "primary_conninfo": f"'{conninfo}'"})
        signal_file = self.data / "standby.signal"
        signal_file.touch()
        if self.user is not None:
            shutil.chown(signal_file, self.user)

    def start(self) -> None:
        self._run(
            *("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"),
            environment=self.environment,
        )

    def stop(self, mode: StopMode = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def promote(self) -> None:
        """End recovery: the standby becomes a primary, on a new timeline."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "promote")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def destroy(self) -> None:
        """Stop the server however it can be stopped, and delete its folder."""
        with contextlib.suppress(subprocess.SubprocessError, OSError, RuntimeError):
            self.stop("immediate")
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


async def settings_in_effect(url: str) -> dict[str, str]:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        rows = await connection.fetch(
            "SELECT name, setting, unit FROM pg_settings WHERE name = any($1::text[])",
            list(REPORTED_SETTINGS),
        )
    finally:
        await connection.close()
    return {row["name"]: row["setting"] + (row["unit"] or "") for row in rows}


async def lease_generations(url: str) -> dict[str, int]:
    """Every lease's generation as the database has it now (the durability probe)."""
    connection = await asyncpg.connect(url, timeout=10)
    try:
        rows = await connection.fetch("SELECT name, generation FROM leases")
    finally:
        await connection.close()
    return {row["name"]: row["generation"] for row in rows}
