"""Structured logs: one JSON object per line, with the event's fields at the top level.

    {"ts": "2026-09-25T03:05:00.123456+00:00", "level": "info", "logger": "tenure.events",
     "event": "lease.taken_over", "lease": "close-day", "holder": "b", "generation": 8,
     "previous_holder": "a", "previous_generation": 7}

Fields come from `extra=` of the logging call; `event` names what happened. `configure` installs
the formatter on the root logger, so uvicorn's own messages come out as JSON too. With traces on
(server/tracing.py), a line written while a span is current also has `trace_id` and `span_id`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
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
