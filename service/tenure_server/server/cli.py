"""`tenure serve`, `tenure migrate` and `tenure admin bump-generations`: the service's commands.

The `tenure` command lives in the client package; it finds these as `COMMANDS`, the entry point
`server` of the group `tenure.commands` (pyproject.toml), when the server extra is installed."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import shutil
import signal
import tempfile
from typing import Any

import uvicorn
from fastapi import FastAPI
from pydantic import ValidationError

from tenure.commands import ServerCommands
from tenure_server.app.telemetry import MULTIPROCESS_ENV
from tenure_server.db.admin import bump_generations
from tenure_server.db.migrate import migrate
from tenure_server.server import logs
from tenure_server.server.app import create_app, database_url
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing, TracingUnavailable
from tenure_server.server.transport import RoundHttpToolsProtocol

_log = logging.getLogger("tenure.server")


class ConfigurationError(SystemExit):
    """Invalid configuration: the message is printed and the process exits with status 1."""


def load_settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{key: value for key, value in overrides.items() if value is not None})
    except ValidationError as error:
        lines = [
            f"  TENURE_{'_'.join(str(part) for part in item['loc']).upper() or '?'}: {item['msg']}"
            for item in error.errors()
        ]
        raise ConfigurationError("invalid configuration:\n" + "\n".join(lines)) from None


def _configure_logging(settings: Settings) -> None:
    logs.configure(settings.log_level, settings.log_format)


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


def serve(host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    settings = load_settings(host=host, port=port, workers=workers)
    _configure_logging(settings)
    # Checked before anything starts, workers or not: a tracing misconfiguration stops here.
    tracing = tracing_from_environment()
    if settings.database_url is None:
        # Start the embedded database once here; workers find it through the environment.
        url = asyncio.run(database_url(settings))
        os.environ["TENURE_DATABASE_URL"] = url
        # uvicorn re-raises SIGTERM after its graceful shutdown; exit normally instead, so the
        # embedded PostgreSQL is stopped by its exit hook rather than left running.
        signal.signal(signal.SIGTERM, _exit_normally)
        settings = load_settings(host=host, port=port, workers=workers)
        _log.info("no TENURE_DATABASE_URL: using the embedded PostgreSQL in %s", settings.data_dir)
    if not settings.auth_configured:
        _log.warning(
            "authentication is OFF (no TENURE_TOKENS_FILE): %s",
            "listening on loopback only"
            if not settings.allow_unauthenticated_remote
            else "TENURE_ALLOW_UNAUTHENTICATED_REMOTE lets anyone who can reach it act as admin",
        )
    _log.info("Tenure listening on http://%s:%d (docs at /docs)", settings.host, settings.port)
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "http": RoundHttpToolsProtocol,
        # Our handler formats uvicorn's lines too; request lines come from RequestEdge.
        "log_config": None,
        "access_log": False,
    }
    if settings.workers == 1:
        uvicorn.run(create_app(settings, tracing), **options)
    else:
        _share_metrics_between_workers()
        uvicorn.run(
            "tenure_server.server.cli:app_from_environment",
            factory=True,
            workers=settings.workers,
            **options,
        )


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
        return await migrate(await database_url(settings))

    applied = asyncio.run(run())
    print("applied: " + (", ".join(f"{v:04d}" for v in applied) if applied else "nothing to do"))


def bump_generations_command(amount: int) -> None:
    settings = load_settings()
    _configure_logging(settings)

    async def run() -> tuple[int, int, int]:
        return await bump_generations(await database_url(settings), amount)

    try:
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
