"""Logs: one JSON object per line, with the event's fields at the top level, or readable text
when a person watches the terminal (`TENURE_LOG_FORMAT`: `auto`, the default, is text when
stderr is a terminal and JSON otherwise).

    {"ts": "2026-09-25T03:05:00.123456+00:00", "level": "info", "logger": "tenure.events",
     "event": "lease.taken_over", "lease": "close-day", "holder": "b", "generation": 8,
     "previous_holder": "a", "previous_generation": 7}

    03:05:00.123 WARNING tenure.events lease.taken_over  lease=close-day holder=b generation=8 …

Fields come from `extra=` of the logging call; `event` names what happened. `configure` installs
the formatter on the root logger, so uvicorn's own messages come out alike. With traces on
(server/tracing.py), a line written while a span is current also has `trace_id` and `span_id`.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

LogFormat = Literal["auto", "json", "text"]

# Attributes every LogRecord has; anything else on a record came from `extra=`. uvicorn's
# `color_message` repeats the message with terminal colours.
_STANDARD = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
    | {"message", "asctime", "taskName", "color_message"}
)

# Libraries whose info lines are their own debugging output: pgserver logs every initdb and
# pg_ctl command with its whole output, where one line of ours (db/pool.py) says what happened.
# Their warnings and errors still show; at `debug` everything does.
_CHATTY = ("pgserver",)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON; values that JSON cannot hold become strings."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        message = record.getMessage()
        fields = _fields(record)
        if "event" not in fields:
            entry["message"] = message
        entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """Formats a record for a person: local time, level, logger, message, then the event's
    fields as `name=value`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s %(message)s", "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = {key: value for key, value in _fields(record).items() if key != "event"}
        if not fields:
            return line
        head, newline, tail = line.partition("\n")  # an exception's traceback stays below
        facts = " ".join(f"{key}={value}" for key, value in fields.items())
        return f"{head}  {facts}{newline}{tail}"


def include_trace_ids(current: Callable[[], tuple[str, str] | None]) -> Callable[[], None]:
    """Give each record made from now on the `trace_id` and `span_id` that `current` returns (if
    any) when it is made, in the code that logs; the function returned undoes it. Without this,
    records carry no such field and logging pays nothing for traces."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        ids = current()
        if ids is not None:
            record.trace_id, record.span_id = ids
        return record

    logging.setLogRecordFactory(factory)
    return lambda: logging.setLogRecordFactory(previous)


def resolve(fmt: LogFormat, stream: TextIO) -> Literal["json", "text"]:
    """`auto` is text for a person at a terminal, JSON for whatever collects the logs."""
    if fmt != "auto":
        return fmt
    return "text" if stream.isatty() else "json"


def configure(level: str, fmt: LogFormat = "auto") -> None:
    """Send every logger's records to stderr at `level`, as JSON lines or as plain text."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = TextFormatter() if resolve(fmt, sys.stderr) == "text" else JsonFormatter()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.NOTSET if level == "debug" else logging.WARNING)
