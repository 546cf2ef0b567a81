"""The `tenure` command finds the service's commands through the entry point the service declares,
never by importing it by name, and says which extra is missing when there are none."""

from __future__ import annotations

from importlib.metadata import EntryPoints

import pytest

from tenure import _cli
from tenure_server.server import cli as server_cli


def test_the_entry_point_is_the_services_commands() -> None:
    """The installed `tenure.commands` entry point `server` loads the service's `COMMANDS`."""
    assert _cli._server_commands("serve") is server_cli.COMMANDS


def test_without_the_entry_point_the_server_extra_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No entry point (the client installed alone): exit with the extra to install."""
    monkeypatch.setattr(_cli, "entry_points", lambda group: EntryPoints(()))
    with pytest.raises(SystemExit) as exited:
        _cli.main(["migrate"])
    assert "`tenure migrate` needs the server extra: pip install 'tenure[server]'" in str(
        exited.value.code
    )
