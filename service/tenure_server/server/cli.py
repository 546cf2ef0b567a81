"""`tenure serve`, `tenure migrate` and `tenure admin bump-generations`: the service's commands.

The `tenure` command lives in the client package; it finds these as `COMMANDS`, the entry point
`server` of the group `tenure.commands` (pyproject.toml), when the server extra is installed."""

from __future__ import annotations

import asyncio
import atexit
import errno
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError
from pydantic_core import ErrorDetails
from uvicorn.supervisors import Multiprocess

from tenure.commands import (
    EXIT_DATABASE_UNREACHABLE,
    EXIT_MIGRATION_LOCKED,
    EXIT_NOT_LISTENING,
    ServerCommands,
)
from tenure_server.adapters.telemetry import MULTIPROCESS_ENV
from tenure_server.db.admin import bump_generations
from tenure_server.db.connecting import DatabaseUnreachable, check_reachable, target
from tenure_server.db.migrate import MigrationLocked, migrate
from tenure_server.server import logs
from tenure_server.server.app import create_app, database_url
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing, TracingUnavailable
from tenure_server.server.transport import RoundHttpToolsProtocol

_log = logging.getLogger("tenure.server")


class ConfigurationError(SystemExit):
    """Invalid configuration: the message is printed and the process exits with status 1
    (EXIT_CONFIGURATION)."""


# The options of `tenure serve` that set a setting: a mistake in one is named as it was typed.
_FLAGS = {"host": "--host", "port": "--port", "workers": "--workers"}


def _problem(item: ErrorDetails, given: Mapping[str, object]) -> str:
    """One validation error in the user's words: the flag or variable, and our validator's own
    message (pydantic's "Value error, " prefix dropped)."""
    error = item.get("ctx", {}).get("error")
    message = str(error) if isinstance(error, Exception) else item["msg"]
    if not item["loc"]:  # a rule between settings: its message names them
        return message
    field = str(item["loc"][0])
    name = _FLAGS[field] if field in given and field in _FLAGS else f"TENURE_{field.upper()}"
    return f"{name}: {message}"


def load_settings(**overrides: Any) -> Settings:
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(**given)
    except ValidationError as error:
        problems = [_problem(item, given) for item in error.errors()]
        raise ConfigurationError(
            "invalid configuration: " + "".join(f"\n  {line}" for line in problems)
            if len(problems) > 1
            else f"invalid configuration: {problems[0]}"
        ) from None


def serving_settings(host: str | None, port: int | None, workers: int | None) -> Settings:
    """The settings of `tenure serve`, which alone listens: it refuses an address beyond
    loopback without authentication (other commands never listen, so they do not care)."""
    settings = load_settings(host=host, port=port, workers=workers)
    if settings.exposed_without_authentication:
        named = f"--host {host}" if host is not None else f"TENURE_HOST={settings.host}"
        raise ConfigurationError(
            f"tenure serve: {named} without authentication would let anyone who reaches it act "
            "as admin: give tokens (TENURE_TOKENS_FILE; `tenure token new` makes one), or set "
            "TENURE_ALLOW_UNAUTHENTICATED_REMOTE=true for a throw-away environment"
        )
    return settings


def _configure_logging(settings: Settings) -> None:
    logs.configure(settings.log_level, settings.log_format)


@contextmanager
def _exit_when_unreachable(command: str) -> Iterator[None]:
    """No connection to the database: one line to stderr and EXIT_DATABASE_UNREACHABLE, not a
    traceback."""
    try:
        yield
    except DatabaseUnreachable as error:
        print(f"tenure {command}: {error}", file=sys.stderr)
        raise SystemExit(EXIT_DATABASE_UNREACHABLE) from None


def tracing_from_environment() -> Tracing | None:
    try:
        return Tracing.from_environment()
    except TracingUnavailable as error:
        raise ConfigurationError(f"tracing: {error}") from None


def app_from_environment() -> FastAPI:
    """The factory each uvicorn worker calls: settings come from the environment."""
    settings = load_settings()
    _configure_logging(settings)
    return create_app(settings, tracing_from_environment())


def _exit_normally(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


async def _reachable_database(settings: Settings) -> str:
    """The database's URL, once a connection to it was opened (the embedded one started)."""
    url = await database_url(settings)
    await check_reachable(url, settings.connect_timeout_seconds)
    if settings.database_url is not None:
        _log.info("connected to %s", target(url) or "the database of TENURE_DATABASE_URL")
    return url


# uvicorn's default: connections that wait while the app starts, or while every worker is busy.
_BACKLOG = 2048


def _listen(settings: Settings) -> socket.socket:
    """The listening socket, bound before the app starts, so that `tenure serve` says it
    listens only once it does, and a taken port is one line (EXIT_NOT_LISTENING)."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        listener.bind((settings.host, settings.port))
        listener.listen(_BACKLOG)
    except OSError as error:
        listener.close()
        hint = ""
        if error.errno == errno.EADDRINUSE:
            hint = " (another tenure serve? choose another port: --port or TENURE_PORT)"
        print(
            f"tenure serve: cannot listen on {settings.host}:{settings.port}: "
            f"{error.strerror or error}{hint}",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_NOT_LISTENING) from None
    listener.set_inheritable(True)  # the workers, when there are several, serve on it too
    return listener


def serve(host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    settings = serving_settings(host, port, workers)
    _configure_logging(settings)
    # Checked before anything starts, workers or not: a tracing misconfiguration stops here.
    tracing = tracing_from_environment()
    with _exit_when_unreachable("serve"):
        url = asyncio.run(_reachable_database(settings))
    if settings.database_url is None:
        # The embedded database is started once, here; workers find it through the environment.
        os.environ["TENURE_DATABASE_URL"] = url
        # uvicorn re-raises SIGTERM after its graceful shutdown; exit normally instead, so the
        # embedded PostgreSQL is stopped by its exit hook rather than left running.
        signal.signal(signal.SIGTERM, _exit_normally)
        settings = load_settings(host=host, port=port, workers=workers)
    listener = _listen(settings)
    _log.info("Tenure listening on http://%s:%d (docs at /docs)", settings.host, settings.port)
    if not settings.auth_configured:
        _log.warning(
            "authentication is OFF (no TENURE_TOKENS_FILE): %s",
            "loopback only"
            if not settings.allow_unauthenticated_remote
            else "TENURE_ALLOW_UNAUTHENTICATED_REMOTE lets anyone who can reach it act as admin",
        )
    _run_uvicorn(settings, tracing, listener)


def _run_uvicorn(settings: Settings, tracing: Tracing | None, listener: socket.socket) -> None:
    """What `uvicorn.run` does, on the socket bound already. Ctrl-C ends it quietly, as there
    (uvicorn re-raises the signal once it has shut down gracefully)."""
    options: dict[str, Any] = {
        "log_level": settings.log_level,
        "http": RoundHttpToolsProtocol,
        # Our handler formats uvicorn's lines too; request lines come from RequestEdge.
        "log_config": None,
        "access_log": False,
    }
    if settings.workers == 1:
        config = uvicorn.Config(create_app(settings, tracing), **options)
        with suppress(KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[listener])
        return
    _share_metrics_between_workers()
    config = uvicorn.Config(
        "tenure_server.server.cli:app_from_environment",
        factory=True,
        workers=settings.workers,
        **options,
    )
    with suppress(KeyboardInterrupt):
        Multiprocess(config, sockets=[listener]).run()


def _share_metrics_between_workers() -> None:
    """Workers count in files of one folder that /metrics sums (prometheus-client multiprocess
    mode), so a scrape sees the whole process tree whichever worker answers. Set before the
    workers start: they read it when they import prometheus-client."""
    if os.environ.get(MULTIPROCESS_ENV):
        return
    folder = tempfile.mkdtemp(prefix="tenure-metrics-")
    os.environ[MULTIPROCESS_ENV] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


def migrate_command() -> None:
    settings = load_settings()
    _configure_logging(settings)

    async def run() -> list[int]:
        return await migrate(
            await database_url(settings),
            settings.connect_timeout_seconds,
            settings.migration_patience,
        )

    with _exit_when_unreachable("migrate"):
        try:
            applied = asyncio.run(run())
        except MigrationLocked as error:
            print(f"tenure migrate: {error}", file=sys.stderr)
            raise SystemExit(EXIT_MIGRATION_LOCKED) from None
    print("applied: " + (", ".join(f"{v:04d}" for v in applied) if applied else "nothing to do"))


def bump_generations_command(amount: int) -> None:
    settings = load_settings()
    _configure_logging(settings)

    async def run() -> tuple[int, int, int]:
        url = await database_url(settings)
        return await bump_generations(url, amount, settings.connect_timeout_seconds)

    try:
        with _exit_when_unreachable("admin bump-generations"):
            leases, fences, floor = asyncio.run(run())
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    print(
        f"bumped {leases} leases by {amount}; raised {fences} fences; "
        f"new leases start above generation {floor}"
    )


COMMANDS = ServerCommands(
    serve=serve, migrate=migrate_command, bump_generations=bump_generations_command
)
