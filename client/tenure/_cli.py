"""The `tenure` command. Service commands (`serve`, `migrate`) need `tenure[server]`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any


def _server_commands() -> Any:
    # Imported by name so the client never depends on the service's packages.
    try:
        return importlib.import_module("tenure_server.cli")
    except ModuleNotFoundError as error:
        sys.exit(
            f"`tenure {sys.argv[1]}` needs the server extra: pip install 'tenure[server]' ({error})"
        )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tenure", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1, TENURE_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8080, TENURE_PORT)")
    serve.add_argument("--workers", type=int, help="worker processes (default 1, TENURE_WORKERS)")
    commands.add_parser("migrate", help="apply database migrations and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        _server_commands().serve(arguments.host, arguments.port, arguments.workers)
    elif arguments.command == "migrate":
        _server_commands().migrate_command()
