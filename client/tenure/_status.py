"""`tenure status`: the service's overview as plain-text tables (what /ui shows), and with
`--watch` one line per live event."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import assert_never

from tenure._event_types import FAMILIES, EventFamily
from tenure._events import StreamEvent
from tenure._models import Overview, UnregisteredJob
from tenure.durations import duration, relative

__all__ = ["render_event", "render_overview"]


def table(headings: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart, headings first."""
    widths = [len(heading) for heading in headings]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = [headings, *rows]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _last(window: str | None, when: str) -> str:
    return "-" if window is None else f"{window} ({when})"


JOB_HEADINGS = ["JOB", "STATUS", "SCHEDULE", "LAST COMPLETED", "DURATION", "NEXT", "INTERRUPTED"]
UNREGISTERED_NOTE = (
    "unregistered: ran without a schedule, so never reported late or missed; register it "
    "(tenure run --register, PUT /v1/jobs/{job})."
)


def _unregistered_row(job: UnregisteredJob, now: datetime) -> list[str]:
    completed, started = job.last_completed, job.last_started
    last, took = "-", None
    if completed is not None and completed.completed_at is not None:
        last = _last(completed.window, relative(completed.completed_at, now))
        took = (completed.completed_at - completed.started_at).total_seconds()
    interrupted = started is not None and started.state == "interrupted"
    return [
        job.name,
        "unregistered",
        "-",
        last,
        duration(took),
        "-",
        started.window if started is not None and interrupted else "-",
    ]


def render_overview(overview: Overview) -> str:
    now = overview.now
    jobs = [
        [
            job.name,
            job.status.status if job.status.status in ("ok", "new") else job.status.status.upper(),
            f"{job.spec.schedule} ({job.spec.timezone})",
            _last(job.status.last_completed_window, relative(job.status.last_completed_at, now)),
            duration(job.status.last_duration_seconds)
            + (" SLOW" if job.status.duration_over_half_interval else ""),
            relative(job.status.next_occurrence, now),
            job.status.interrupted_window or "-",
        ]
        for job in overview.jobs
    ] + [_unregistered_row(job, now) for job in overview.unregistered_jobs]
    leases = [
        [
            lease.name,
            "STUCK" if lease.stuck else ("held" if lease.held else "expired"),
            lease.holder,
            str(lease.generation),
            duration(lease.held_for_seconds) if lease.held else "-",
            duration(lease.expires_in_seconds) if lease.held else "-",
        ]
        for lease in overview.leases
    ]
    alerts = [
        [alert.kind, alert.subject, alert.window, relative(alert.opened_at, now), alert.summary]
        for alert in overview.alerts
    ]
    events = [
        [relative(event.at, now), event.scope, event.subject, event.kind, event.detail or ""]
        for event in overview.events
    ]
    parts = [f"Tenure at {now.isoformat(timespec='seconds')}"]
    sections = [
        (
            "JOBS",
            ["JOB", "STATUS", "SCHEDULE", "LAST COMPLETED", "DURATION", "NEXT", "INTERRUPTED"],
            jobs,
        ),
        ("LEASES", ["LEASE", "STATE", "HOLDER", "GEN", "HELD FOR", "EXPIRES IN"], leases),
        ("OPEN ALERTS", ["KIND", "SUBJECT", "WINDOW", "OPENED", "SUMMARY"], alerts),
        ("RECENT EVENTS", ["WHEN", "SCOPE", "SUBJECT", "EVENT", "DETAIL"], events),
    ]
    for title, headings, rows in sections:
        parts.append(f"\n{title}\n" + (table(headings, rows) if rows else "(none)"))
        if title == "JOBS" and overview.unregistered_jobs:
            parts.append(UNREGISTERED_NOTE)
    return "\n".join(parts) + "\n"


def _holding(event: StreamEvent) -> str:
    text = f"holder {event.holder} generation {event.generation}"
    previous = event.data.get("previous_holder")
    if previous is not None:
        text += f" (was {previous} generation {event.data.get('previous_generation')})"
    return text


def _fence_rejection(event: StreamEvent) -> str:
    data = event.data
    text = f"lease {data.get('lease')} generation {event.generation} refused: {data.get('reason')}"
    highest = data.get("highest")
    return text if highest is None else f"{text}, highest {highest}"


def _family(event_type: str) -> EventFamily | None:
    """The family of a type, by its prefix (a newer service's type of a known family included)."""
    prefix = event_type.partition(".")[0]
    return next((family for family in FAMILIES if family == prefix), None)


def _detail(family: EventFamily, event: StreamEvent) -> str:
    """What follows an event's name: one case per family of the service's catalogue, so that a
    new family fails type checking here until it is rendered."""
    match family:
        case "lease":
            detail = _holding(event)
            actor = event.data.get("actor")
            return detail if actor is None else f"{detail} by {actor}"
        case "fence":
            return _fence_rejection(event)
        case "window":
            detail = f"window {event.window} attempt {event.data.get('attempt')} {_holding(event)}"
            took = event.data.get("duration_seconds")
            return f"{detail} took {duration(took)}" if isinstance(took, int | float) else detail
        case "alert":
            kind, summary = event.data.get("kind"), event.data.get("summary", "")
            return f"{kind} window {event.window}: {summary}"
        case unhandled:
            assert_never(unhandled)


def render_event(event: StreamEvent) -> str:
    """One line: when, type, name, then the holding (leases; who forced a force-release), the
    window (windows), the refused token and why (fence rejections) or the alert."""
    at = event.at
    when = "-" if at is None else at.isoformat(timespec="seconds")
    family = _family(event.type)
    detail = str(event.data.get("detail", "")) if family is None else _detail(family, event)
    return f"{when}  {event.type}  {event.name or '-'}  {detail}".rstrip()
