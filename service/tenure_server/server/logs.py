"""Structured logs: one JSON object per line, with the event's fields at the top level.

    {"ts": "2026-09-25T03:05:00.123456+00:00", "level": "info", "logger": "tenure.events",
     "event": "lease.taken_over", "lease": "close-day", "holder": "b", "generation": 8,
     "previous_holder": "a", "previous_generation": 7}

Fields come from `extra=` of the logging call; `event` names what happened. `configure` installs
the formatter on the root logger, so uvicorn's own messages come out as JSON too.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["json", "text"]

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
    | {"message", "asctime", "taskName"}
)


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON; values that JSON cannot hold become strings."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        message = record.getMessage()
        fields = {key: value for key, value in vars(record).items() if key not in _STANDARD}
        if "event" not in fields:
            entry["message"] = message
        entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure(level: str, fmt: LogFormat = "json") -> None:
    """Send every logger's records to stderr at `level`, as JSON lines or as plain text."""
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level.upper())
