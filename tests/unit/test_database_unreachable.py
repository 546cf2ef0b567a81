"""When no connection to the database can be opened, start-up says where it looked (host, port,
database, user; never the password or the whole URL) and why, by exception class and SQLSTATE."""

from __future__ import annotations

import socket
import ssl

import asyncpg
import pytest

from tenure_server.db.connecting import DatabaseUnreachable, Target, check_reachable, reason, target


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (
            "postgresql://app:s3cret@db.example:6432/tenure?sslmode=require",
            Target("db.example", "6432", "tenure", "app", "require"),
        ),
        (
            "postgres://app@db1:5433,db2:5434/tenure",
            Target("db1", "5433", "tenure", "app", None),
        ),
        ("postgresql://app@[::1]/x", Target("::1", "5432", "x", "app", None)),
        (
            "postgresql://postgres:@/postgres?host=/run/pg",
            Target("/run/pg", "5432", "postgres", "postgres", None),
        ),
        ("postgresql://app@db/?dbname=other", Target("db", "5432", "other", "app", None)),
    ],
)
def test_a_url_names_host_port_database_and_user(url: str, named: Target) -> None:
    """The parts of a URL an operator checks, with the defaults libpq would use."""
    assert target(url) == named


def test_where_is_said_without_the_password() -> None:
    """The place reads like a psql error's, a unix socket as its path; never the password."""
    assert str(target("postgresql://app:s3cret@db.example:6432/tenure")) == (
        'database "tenure" on db.example:6432 as "app"'
    )
    assert str(target("postgresql://app@[::1]:5433/x")) == 'database "x" on [::1]:5433 as "app"'
    assert str(target("postgresql://postgres:@/postgres?host=/run/pg")) == (
        'database "postgres" on /run/pg/.s.PGSQL.5432 as "postgres"'
    )
    assert target("mysql://app:s3cret@db/tenure") is None


PLAIN = target("postgresql://app@db.example/tenure")
UNENCRYPTED = target("postgresql://app@db.example/tenure?sslmode=disable")
HBA = 'no pg_hba.conf entry for host "10.0.0.7", user "app", database "tenure", no encryption'


@pytest.mark.parametrize(
    ("error", "where", "said"),
    [
        (asyncpg.InvalidCatalogNameError('database "tenure" does not exist'), PLAIN, "no such"),
        (asyncpg.InvalidPasswordError("password authentication failed"), PLAIN, "wrong password"),
        (asyncpg.InvalidAuthorizationSpecificationError(HBA), PLAIN, f"SQLSTATE 28000: {HBA})"),
        (asyncpg.InvalidAuthorizationSpecificationError(HBA), UNENCRYPTED, "sslmode=require"),
        (asyncpg.TooManyConnectionsError("too many clients"), PLAIN, "(SQLSTATE 53300)"),
        (ConnectionRefusedError(111, "Connect call failed"), PLAIN, "connection refused"),
        (socket.gaierror(-2, "Name or service not known"), PLAIN, "cannot be resolved"),
        (TimeoutError(), PLAIN, "no answer within 10 s"),
        (ssl.SSLCertVerificationError(1, "certificate verify failed"), PLAIN, "TLS failed"),
        (FileNotFoundError(2, "No such file or directory"), PLAIN, "no PostgreSQL socket"),
        (asyncpg.ClientConfigurationError("invalid DSN"), None, "not a valid URL"),
    ],
)
def test_each_failure_is_told_by_its_class(
    error: BaseException, where: Target | None, said: str
) -> None:
    """Refused, unknown host, no such database, wrong password, the server's access rules (a
    hint about TLS when this connection was unencrypted), timeout, TLS: each said apart."""
    assert said in reason(error, where, 10.0)


def test_tls_is_hinted_only_when_this_connection_was_not_encrypted() -> None:
    """sslmode=prefer (the default) tried TLS already: no hint that could mislead."""
    error = asyncpg.InvalidAuthorizationSpecificationError(HBA)
    assert "sslmode=require" not in reason(error, PLAIN, 10.0)


async def test_a_refused_connection_is_one_line_without_the_password() -> None:
    """A real refused connection: host, port, database and user, the reason, never the password
    nor the URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://app:hunter2@127.0.0.1:{port}/tenure"
    with pytest.raises(DatabaseUnreachable) as unreachable:
        await check_reachable(url, 5.0)
    message = str(unreachable.value)
    assert message == (
        f'cannot connect to database "tenure" on 127.0.0.1:{port} as "app": '
        "connection refused: nothing listens on that host and port"
    )


async def test_a_password_quoted_by_a_message_is_masked() -> None:
    """Whatever a library's message quotes of the URL, the password never reaches the line."""
    url = "postgresql://app:hunter2@db.example:hunter2/tenure"
    with pytest.raises(DatabaseUnreachable) as unreachable:
        await check_reachable(url, 5.0)
    assert "hunter2" not in str(unreachable.value)
    assert "not a valid URL" in str(unreachable.value)
