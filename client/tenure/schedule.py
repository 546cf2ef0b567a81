"""Schedule arithmetic: which occurrence of a cron schedule an instant belongs to, and its key.

Pure functions shared by the client and the service (`POST /v1/windows/resolve`), so both sides
agree on what "this run's window" is. `cronsim` is imported inside the functions that need it:
the client package must import with `httpx` alone.

Daylight-saving time follows cronsim, which mimics Debian cron for jobs with a fixed minute and
hour (neither field starting with `*`):

- a local time that does not exist (the spring-forward gap) fires once, at the first instant
  after the gap: `30 2 * * *` in America/New_York on 2026-03-08 fires at 03:00-04:00, and
  `0 0 * * *` in America/Sao_Paulo on 2018-11-04 fires at 01:00-02:00;
- a local time that happens twice (the fall-back overlap) fires once, at its first pass:
  `30 1 * * *` in America/New_York on 2026-11-01 fires at 01:30-04:00 only (croniter would fire
  at 01:30-05:00 too).

So a daily schedule has exactly one occurrence per local date. Jobs with `*` in the minute or hour
field (`0 * * * *`, `*/15 * * * *`) follow elapsed time instead: an hourly job fires 23 times on
a spring-forward day and 25 times on a fall-back day, and the offset in the "occurrence" key
tells the two 01:00 runs apart.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "KeyFormat",
    "Resolved",
    "check_cron",
    "check_timezone",
    "next_occurrence",
    "resolve",
    "scheduled_occurrence",
    "window_key",
    "window_occurrence",
]

KeyFormat = Literal["occurrence", "date", "previous_day"]

CRON_MAX_LENGTH = 200
TIMEZONE_MAX_LENGTH = 64
_CRON_FIELDS = 5
# IANA zone names are ASCII words joined by "/"; this also keeps "..", absolute paths and NUL
# bytes away from the file lookup zoneinfo does.
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
# Files in a zoneinfo tree that are not IANA zones: "localtime" is this machine's zone, and
# "posix/" and "right/" are alternative copies ("right/" counts leap seconds).
_NOT_ZONES = frozenset({"localtime", "posixrules"})
_NOT_ZONE_PREFIXES = ("posix/", "right/")
# Brackets already found, per (cron, zone): every instant of [occurrence, following) has that
# bracket, so an hour's status pages, monitor passes and claims of an hourly job share one
# cronsim walk. Bounded: the least recently used schedules go first.
_KNOWN_SCHEDULES = 4096
_KNOWN_PER_SCHEDULE = 4
# A bracket in UTC (to compare instants by) and in the schedule's zone (the answer).
_Known = tuple[datetime, datetime, tuple[datetime, datetime]]
_known: OrderedDict[tuple[str, str], tuple[_Known, ...]] = OrderedDict()
_known_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Resolved:
    """The occurrence an instant belongs to, and the window key derived from it."""

    occurrence: datetime
    window: str


def check_cron(expr: str) -> str:
    """Return `expr` if it is a 5-field cron expression cronsim accepts; else raise ValueError."""
    from cronsim import CronSim, CronSimError  # lazy: see the module docstring

    if not expr.strip():
        raise ValueError("cron expression is empty")
    if len(expr) > CRON_MAX_LENGTH:
        raise ValueError(f"cron expression is longer than {CRON_MAX_LENGTH} characters")
    if len(expr.split()) != _CRON_FIELDS:
        raise ValueError(
            f"cron expression must have {_CRON_FIELDS} fields "
            f"(minute hour day-of-month month day-of-week), got {expr!r}"
        )
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as error:
        raise ValueError(f"invalid cron expression {expr!r}: {error}") from None
    return expr


def check_timezone(name: str) -> str:
    """Return `name` if it is an IANA time zone zoneinfo knows; else raise ValueError."""
    _zone(name)
    return name


def scheduled_occurrence(cron: str, tz: str, now: datetime) -> datetime:
    """The latest occurrence of `cron` in zone `tz` at or before `now`, as a datetime in `tz`.

    Every instant from one occurrence up to (not including) the next maps to that occurrence, so
    a run at 00:05 and a late run at 03:40 of `5 0 * * *` get the same one. `now` must be
    timezone-aware. Daylight-saving gaps and overlaps: see the module docstring.
    """
    return _bracket(cron, tz, now)[0]


def next_occurrence(cron: str, tz: str, now: datetime) -> datetime:
    """The first occurrence of `cron` in zone `tz` strictly after `now`, as a datetime in `tz`."""
    return _bracket(cron, tz, now)[1]


def window_key(occurrence: datetime, key: KeyFormat = "occurrence") -> str:
    """The window key for an occurrence, using the date and offset of the zone it carries.

    "occurrence": ISO 8601 to the second with offset (`2026-09-25T00:05:00-03:00`);
    "date": its local date (`2026-09-25`);
    "previous_day": the local date before it, for a job that closes yesterday just after midnight.
    """
    _require_aware(occurrence, "occurrence")
    if key == "occurrence":
        return occurrence.isoformat(timespec="seconds")
    if key == "date":
        return occurrence.date().isoformat()
    if key == "previous_day":
        if occurrence.date() == date.min:
            raise ValueError("the first day of year 1 has no previous day")
        return (occurrence.date() - timedelta(days=1)).isoformat()
    # Unreachable for typed callers; the service passes strings from the wire.
    raise ValueError(f"unknown key format {key!r}: use 'occurrence', 'date' or 'previous_day'")


def resolve(cron: str, tz: str, at: datetime, key: KeyFormat = "occurrence") -> Resolved:
    """The occurrence `at` belongs to and its window key."""
    occurrence = scheduled_occurrence(cron, tz, at)
    return Resolved(occurrence=occurrence, window=window_key(occurrence, key))


def window_occurrence(cron: str, tz: str, window: str, key: KeyFormat) -> datetime | None:
    """The earliest occurrence a window key of format `key` can stand for: the instant an
    "occurrence" key names; the first occurrence on a "date" key's local date, or on the day
    after a "previous_day" key's (the start of that day when none falls on it). None when
    `window` is not a key of that format.

    A window resolved at an instant never stands for an occurrence after it, so the service
    can refuse to start a window whose occurrence is still ahead of its clock.
    """
    if key == "occurrence":
        try:
            named = datetime.fromisoformat(window)
        except ValueError:
            return None
        return named if named.tzinfo is not None and named.utcoffset() is not None else None
    try:
        day = date.fromisoformat(window) + timedelta(days=1 if key == "previous_day" else 0)
    except ValueError:
        return None
    except OverflowError:  # the day after 9999-12-31: later than any clock
        return datetime.max.replace(tzinfo=UTC)
    zone = _zone(tz)
    # fold=0: a midnight in a spring-forward gap is the first instant after the gap.
    start = datetime.combine(day, datetime.min.time(), tzinfo=zone)
    try:
        occurrence, following = _bracket(cron, tz, start)
    except ValueError:  # no occurrence near the limits of datetime
        return start
    first = occurrence if occurrence.astimezone(UTC) == start.astimezone(UTC) else following
    return first if first.date() == day else start


def _zone(name: str) -> ZoneInfo:
    if not name:
        raise ValueError("time zone is empty")
    if len(name) > TIMEZONE_MAX_LENGTH:
        raise ValueError(f"time zone is longer than {TIMEZONE_MAX_LENGTH} characters")
    if not _ZONE_NAME.fullmatch(name) or name in _NOT_ZONES or name.startswith(_NOT_ZONE_PREFIXES):
        raise ValueError(f"{name!r} is not an IANA time zone name")
    try:
        return ZoneInfo(name)
    # Not found is a KeyError; a directory ("America") an OSError; a stray file a ValueError.
    except (ZoneInfoNotFoundError, OSError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None


def _require_aware(moment: datetime, what: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got {moment.isoformat()}")


def _bracket(cron: str, tz: str, now: datetime) -> tuple[datetime, datetime]:
    """The occurrence at or before `now` and the one strictly after it, in zone `tz`."""
    _require_aware(now, "now")
    try:
        instant = now.astimezone(UTC)
        # In UTC, as in _settle: datetimes of one zone compare by wall time, ignoring fold.
        for start, end, found in _known.get((cron, tz), ()):
            if start <= instant < end:
                return found
        check_cron(cron)
        zone = _zone(tz)
        occurrence, following = _settle(cron, zone, instant)
    except OverflowError:
        raise ValueError(f"now is too close to the limits of datetime: {now.isoformat()}") from None
    found = occurrence.astimezone(zone), following.astimezone(zone)
    _remember((cron, tz), (occurrence, following, found))
    return found


def _remember(schedule: tuple[str, str], known: _Known) -> None:
    with _known_lock:
        _known[schedule] = (known, *_known.get(schedule, ())[: _KNOWN_PER_SCHEDULE - 1])
        _known.move_to_end(schedule)
        while len(_known) > _KNOWN_SCHEDULES:
            _known.popitem(last=False)


def _settle(cron: str, zone: ZoneInfo, instant: datetime) -> tuple[datetime, datetime]:
    """The occurrences around `instant`, in UTC, checked against each other both ways.

    Everything is compared in UTC: Python compares two datetimes of one zone by wall time and
    ignores fold, so 01:30-04:00 and 01:30-05:00 in New York would count as equal.
    """
    occurrence = _step(cron, zone, instant, reverse=True)
    following = _step(cron, zone, occurrence, reverse=False)
    while True:
        # The reverse step may land one occurrence early: it yields occurrences strictly before
        # `instant`, and for fixed-time jobs cronsim walks wall time, which cannot tell the two
        # passes of a repeated hour apart.
        if following <= instant:
            occurrence, following = following, _step(cron, zone, following, reverse=False)
            continue
        # Forward and reverse iteration disagree where clocks move by half an hour
        # (Australia/Lord_Howe, `15 */2 * * *`): forward skips an occurrence reverse finds.
        between = _step(cron, zone, following, reverse=True)
        if between <= occurrence:
            return occurrence, following
        if between <= instant:
            occurrence, following = between, _step(cron, zone, between, reverse=False)
        else:
            following = between


def _step(cron: str, zone: ZoneInfo, start: datetime, *, reverse: bool) -> datetime:
    """The occurrence next to `start` (before it when `reverse`), in UTC."""
    from cronsim import CronSim  # lazy: see the module docstring

    try:
        found: datetime = next(CronSim(cron, start.astimezone(zone), reverse=reverse))
    except StopIteration:
        raise ValueError(f"cron expression {cron!r} does not fire within 50 years") from None
    return found.astimezone(UTC)
