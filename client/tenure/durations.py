"""Durations and moments as an operator reads them: `3 min 5 s`, `in 2 h 10 min`, `4 s ago`.

Shared by `tenure status` (plain text) and the service's dashboard (/ui), so both show a job's
last run and a lease's expiry alike. `missing` is what stands for no value: `-` in a terminal,
`—` on the page.
"""

from __future__ import annotations

from datetime import datetime

__all__ = ["duration", "relative"]


def duration(seconds: float | None, missing: str = "-") -> str:
    """`42 s`, `3 min 5 s`, `2 h 10 min`, `3 d 4 h` (the sign is dropped); `missing` for None."""
    if seconds is None:
        return missing
    total = round(abs(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def relative(moment: datetime | None, now: datetime, missing: str = "-") -> str:
    """`in 3 min 5 s` for a moment after `now`, `4 s ago` otherwise; `missing` for None."""
    if moment is None:
        return missing
    seconds = (moment - now).total_seconds()
    return f"in {duration(seconds)}" if seconds > 0 else f"{duration(seconds)} ago"
