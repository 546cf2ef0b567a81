"""The lines `tenure status --watch` prints for each kind of event."""

from __future__ import annotations

from typing import Any

import pytest

from tenure import StreamEvent
from tenure._status import render_event

AT = "2026-12-04T19:00:00+00:00"


@pytest.mark.parametrize(
    ("kind", "data", "line"),
    [
        (
            "lease.taken_over",
            {"lease": "close-day", "holder": "b", "generation": 8},
            f"{AT}  lease.taken_over  close-day  holder b generation 8",
        ),
        (
            "lease.acquired",
            {
                "lease": "l",
                "holder": "b",
                "generation": 2,
                "previous_holder": "a",
                "previous_generation": 1,
            },
            f"{AT}  lease.acquired  l  holder b generation 2 (was a generation 1)",
        ),
        (
            "window.completed",
            {
                "job": "close-day",
                "window": "2026-12-04",
                "lease": "close-day",
                "holder": "w",
                "generation": 3,
                "attempt": 1,
                "duration_seconds": 125.0,
            },
            f"{AT}  window.completed  close-day  window 2026-12-04 attempt 1 holder w"
            " generation 3 took 2 min 5 s",
        ),
        (
            "alert.opened",
            {
                "kind": "missed",
                "subject": "send-invoices",
                "window": "2026-12-04",
                "summary": "deadline passed",
            },
            f"{AT}  alert.opened  send-invoices  missed window 2026-12-04: deadline passed",
        ),
        (
            "fence.rejected",
            {
                "resource": "payouts",
                "lease": "daily-close",
                "generation": 1,
                "reason": "stale_generation",
                "highest": 2,
            },
            f"{AT}  fence.rejected  payouts  lease daily-close generation 1 refused:"
            " stale_generation, highest 2",
        ),
        (
            "lease.force_released",
            {
                "lease": "close-day",
                "holder": "(force-released)",
                "generation": 8,
                "previous_holder": "w1",
                "previous_generation": 7,
                "actor": "admin",
            },
            f"{AT}  lease.force_released  close-day  holder (force-released) generation 8"
            " (was w1 generation 7) by admin",
        ),
        (
            "stream.reset",
            {"reason": "history-gap", "detail": "events may have been missed"},
            f"{AT}  stream.reset  -  events may have been missed",
        ),
    ],
)
def test_one_line_per_event(kind: str, data: dict[str, Any], line: str) -> None:
    """Time, type, name, then the holding (and who forced it), the window, the refused token and
    why, or the alert's kind and summary."""
    event = StreamEvent("1", kind, {"type": kind, "at": AT, **data})
    assert render_event(event) == line
