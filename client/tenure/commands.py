"""The service's commands of the `tenure` CLI, as the client and the service agree on them.

The `tenure` command lives in the client; `serve`, `migrate` and `admin bump-generations` are the
service's and need `tenure[server]`. The service declares a `ServerCommands` as the entry point
`server` of the group `tenure.commands` (pyproject.toml); the CLI finds it with
`importlib.metadata`, so the client never names a module of the service.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXIT_CONFIGURATION",
    "EXIT_DATABASE_UNREACHABLE",
    "EXIT_MIGRATION_LOCKED",
    "EXIT_NOT_LISTENING",
    "SERVER",
    "ServerCommands",
]

ENTRY_POINT_GROUP = "tenure.commands"
SERVER = "server"

# Exit statuses of the service's commands (`tenure serve --help`, docs/operations.md); 2 is a
# usage error, as for every command.
EXIT_CONFIGURATION = 1  # a setting or option is invalid: the message names it
EXIT_NOT_LISTENING = 3  # serve: the address cannot be listened on, or the app failed to start
EXIT_DATABASE_UNREACHABLE = 69  # no connection to the database (sysexits' EX_UNAVAILABLE)
EXIT_MIGRATION_LOCKED = 75  # migrate: a lock stayed taken on every try (sysexits' EX_TEMPFAIL)


@dataclass(frozen=True, slots=True)
class ServerCommands:
    """What each of the service's commands runs, given its parsed options."""

    # `tenure serve [--host H] [--port P] [--workers N]`; None leaves the setting to TENURE_*.
    serve: Callable[[str | None, int | None, int | None], None]
    # `tenure migrate`
    migrate: Callable[[], None]
    # `tenure admin bump-generations --by N`
    bump_generations: Callable[[int], None]
