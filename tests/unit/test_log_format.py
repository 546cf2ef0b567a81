"""Logs read well where they are read: text for a person at a terminal, JSON for a collector,
and a library's debugging chatter (pgserver's initdb output) kept out of both."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from tenure_server.server import logs
from tenure_server.server.settings import Settings


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_is_text_on_a_terminal_and_json_elsewhere() -> None:
    """`auto`, the default, looks at stderr; `json` and `text` are taken as said."""
    assert Settings.model_fields["log_format"].default == "auto"
    assert logs.resolve("auto", Terminal()) == "text"
    assert logs.resolve("auto", io.StringIO()) == "json"
    assert logs.resolve("json", Terminal()) == "json"
    assert logs.resolve("text", io.StringIO()) == "text"


def record(message: str, **fields: object) -> logging.LogRecord:
    made = logging.LogRecord("tenure.events", logging.WARNING, "x", 1, message, None, None)
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_text_is_one_line_with_the_events_facts() -> None:
    """Time, level, logger, message, then each fact as name=value (`event` is the message)."""
    line = logs.TextFormatter().format(
        record("lease.taken_over", event="lease.taken_over", lease="close-day", generation=8)
    )
    assert line.endswith(" WARNING tenure.events lease.taken_over  lease=close-day generation=8")
    assert "\n" not in line


def test_uvicorns_coloured_copy_of_a_message_is_not_repeated() -> None:
    """uvicorn adds `color_message` (the message again, with terminal colours): neither
    format shows it."""
    made = record("Started server process [1]", color_message="Started \x1b[36m%d\x1b[0m")
    assert "color_message" not in json.loads(logs.JsonFormatter().format(made))
    assert "\x1b" not in logs.TextFormatter().format(made)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    pgserver = logging.getLogger("pgserver").level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("pgserver").setLevel(pgserver)


@pytest.mark.usefixtures("restored_logging")
def test_pgservers_info_lines_show_only_at_debug() -> None:
    """pgserver logs each initdb and pg_ctl run with its whole output at info: only warnings
    and errors of it show, unless the level is debug."""
    logs.configure("info", "json")
    chatty = logging.getLogger("pgserver")
    assert not chatty.isEnabledFor(logging.INFO)
    assert chatty.isEnabledFor(logging.WARNING)
    assert logging.getLogger("tenure.db").isEnabledFor(logging.INFO)
    logs.configure("debug", "json")
    assert chatty.isEnabledFor(logging.INFO)
