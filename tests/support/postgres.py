"""The PostgreSQL server of tests and benchmarks: one given by URL, used as is, or pgserver's
embedded one in a short temporary folder (its unix socket lives there, and socket paths are
short), stopped and deleted afterwards. Also what is done to a server by URL (a database's URL,
statements run once) and pgserver's own programs (initdb, pg_ctl, pgbench: the embedded server's
version), which the chaos harness drives itself.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

CONNECT_TIMEOUT_SECONDS = 10.0


@contextmanager
def _importing_pgserver() -> Iterator[None]:
    """pgserver asks platformdirs for XDG_RUNTIME_DIR when imported, and warns where (as on CI
    machines) it is not set."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@contextmanager
def embedded(settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """pgserver's PostgreSQL in a fresh folder until the block ends; yields its URL.
    `settings` (ALTER SYSTEM, e.g. max_connections) are in effect: the server is started once
    to write them and again to read them, as some take effect only at start."""
    with _importing_pgserver():
        from pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="tnpg"))
    try:
        if settings:
            with get_server(folder, cleanup_mode="stop") as first:
                altered = (f"ALTER SYSTEM SET {name} = {value}" for name, value in settings.items())
                asyncio.run(execute(str(first.get_uri()), *altered))
        with get_server(folder, cleanup_mode="delete") as server:
            yield str(server.get_uri())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def server(url: str | None, settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """The server at `url` as it is, or (no URL) an embedded one with `settings`; yields its
    URL."""
    if url:
        yield url
        return
    with embedded(settings) as started:
        yield started


def with_database(url: str, database: str) -> str:
    """`url` with its database replaced."""
    return urlunsplit(urlsplit(url)._replace(path="/" + database))


async def execute(url: str, *statements: str) -> None:
    """Run the statements on one connection to `url`, in order, each in a transaction of its
    own (CREATE DATABASE and ALTER SYSTEM refuse to run inside a larger one)."""
    connection = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT_SECONDS)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


@asynccontextmanager
async def unreachable(server_url: str, database_url: str) -> AsyncIterator[None]:
    """While the block runs, the database of `database_url` refuses new connections and its open
    ones are cut, as in an outage; afterwards it accepts them again."""
    database = urlsplit(database_url).path.lstrip("/")
    admin = await asyncpg.connect(server_url, timeout=CONNECT_TIMEOUT_SECONDS)
    try:
        await admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", database
        )
        yield
    finally:
        await admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        await admin.close()


def program(name: str) -> Path:
    """One of the PostgreSQL programs pgserver ships (`initdb`, `pg_ctl`, `pgbench`, …)."""
    with _importing_pgserver():
        import pgserver  # no server is started: only the package's folder is read
    return Path(pgserver.__file__).parent / "pginstall" / "bin" / name
