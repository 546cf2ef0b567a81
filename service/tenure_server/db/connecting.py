"""Opening a connection at start-up, and saying in one line why none could be opened.

`tenure serve`, `tenure migrate` and `tenure admin` connect before doing anything else; when the
database cannot be reached, the operator gets where it was looked for (host, port, database and
user, never the password or the whole URL) and the reason, told apart by exception class and
SQLSTATE (never by the text of a message):

    cannot connect to database "tenure" on db.example:5432 as "app": connection refused (…)
"""

from __future__ import annotations

import getpass
import os
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

import asyncpg

from tenure_server.db.repository import Record

DEFAULT_PORT = 5432
# How long start-up waits for a connection (TENURE_CONNECT_TIMEOUT_SECONDS): long enough for a
# database across a region, short enough that a firewall dropping packets is reported soon.
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Target:
    """What a database URL names, without its password."""

    host: str
    port: str
    database: str
    user: str
    sslmode: str | None

    def __str__(self) -> str:
        if self.host.startswith("/"):  # a folder: the server's unix socket is in it
            place = f"{self.host}/.s.PGSQL.{self.port}"
        elif ":" in self.host:
            place = f"[{self.host}]:{self.port}"
        else:
            place = f"{self.host}:{self.port}"
        return f'database "{self.database}" on {place} as "{self.user}"'


class DatabaseUnreachable(Exception):
    """No connection could be opened: `where` says to what (never with a password), `reason`
    why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"cannot connect to {where}: {reason}")
        self.where = where
        self.reason = reason


def target(dsn: str) -> Target | None:
    """What `dsn` names (the first host of several), with the PG* variables and libpq's
    defaults for what it leaves out; None when it is not a postgresql:// URL at all."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        return None
    query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
    userinfo, _, hosts = parts.netloc.rpartition("@")
    first = hosts.split(",")[0]
    host, port = first, ""
    if first.startswith("["):  # [IPv6]:port
        host, _, rest = first[1:].partition("]")
        port = rest.removeprefix(":")
    elif ":" in first:
        host, _, port = first.rpartition(":")
    user = (
        query.get("user")
        or unquote(userinfo.partition(":")[0])
        or os.environ.get("PGUSER")
        or getpass.getuser()
    )
    return Target(
        host=query.get("host") or unquote(host) or os.environ.get("PGHOST") or "localhost",
        port=query.get("port") or port or os.environ.get("PGPORT") or str(DEFAULT_PORT),
        database=query.get("dbname")
        or query.get("database")
        or unquote(parts.path[1:])
        or os.environ.get("PGDATABASE")
        or user,
        user=user,
        sslmode=query.get("sslmode") or os.environ.get("PGSSLMODE"),
    )


def _refused_by_access_rules(error: asyncpg.PostgresError, where: Target | None) -> str:
    # SQLSTATE 28000 is every refusal of pg_hba.conf (no rule for this host, user, database
    # and encryption), and a role that does not exist; the server's own words say which.
    hint = ""
    if where is not None and where.sslmode in ("disable", "allow"):
        hint = (
            f"; this connection was not encrypted (sslmode={where.sslmode}): if the server "
            "requires TLS, use sslmode=require"
        )
    return f"refused by the server's access rules (SQLSTATE 28000: {error}){hint}"


def reason(error: BaseException, where: Target | None, seconds: float) -> str:
    """Why a connection attempt failed, in words an operator can act on."""
    match error:
        case asyncpg.InvalidCatalogNameError():
            return "no such database on that server (create it, or correct the name)"
        case asyncpg.InvalidPasswordError():
            return "authentication failed: wrong password for that user"
        case asyncpg.InvalidAuthorizationSpecificationError():
            return _refused_by_access_rules(error, where)
        case asyncpg.PostgresError():
            return f"the server refused: {error} (SQLSTATE {error.sqlstate})"
        case ConnectionRefusedError():
            return "connection refused: nothing listens on that host and port"
        case socket.gaierror():
            return f"the host name cannot be resolved ({error.strerror})"
        case TimeoutError():
            return f"no answer within {seconds:g} s (TENURE_CONNECT_TIMEOUT_SECONDS)"
        case ssl.SSLError():
            return f"TLS failed: {error.strerror or error}"
        case FileNotFoundError():
            return "no PostgreSQL socket in that folder"
        case OSError():
            return error.strerror or str(error)
        case ValueError():  # asyncpg's checks of the URL (ClientConfigurationError), a bad port
            return f"not a valid URL, postgresql://USER:PASSWORD@HOST:PORT/DATABASE ({error})"
        case _:
            return f"{type(error).__name__}: {error}"


# What asyncpg.connect raises when no connection can be made: the server's refusals, the
# network's, asyncpg's own checks of the URL, and the timeout.
_CONNECT_FAILURES = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, ValueError)


async def connect(dsn: str, seconds: float) -> asyncpg.Connection[Record]:
    """A connection to `dsn` within `seconds`, or `DatabaseUnreachable` saying why none could
    be opened."""
    try:
        return await asyncpg.connect(dsn, timeout=seconds)
    except _CONNECT_FAILURES as error:  # TimeoutError is an OSError
        named = target(dsn)
        where = "the database of TENURE_DATABASE_URL" if named is None else str(named)
        said = reason(error, named, seconds)
        password = urlsplit(dsn).password
        if password:  # whatever a part quoted of the URL, the password is never shown
            where, said = where.replace(password, "***"), said.replace(password, "***")
        raise DatabaseUnreachable(where, said) from None


async def check_reachable(dsn: str, seconds: float) -> None:
    """Open one connection and close it: `DatabaseUnreachable` when none can be opened."""
    connection = await connect(dsn, seconds)
    await connection.close()
