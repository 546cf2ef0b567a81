"""The operator's page, rendered on the server as one HTML string: no template engine, no
JavaScript build, every value escaped. Its one script (dashboard.js, inlined) follows the event
stream and swaps in the page rendered again when something changes; without the stream it
refreshes every REFRESH_SECONDS, and without JavaScript a meta refresh does."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import lru_cache
from html import escape
from importlib.resources import files

from tenure.durations import duration, relative
from tenure_server.app.status import Evaluated, Overview, Unregistered
from tenure_server.app.stream_wire import EVENT_TYPES, to_json
from tenure_server.domain.alerts import OpenAlert
from tenure_server.domain.history import NotableEvent
from tenure_server.domain.status import JOB_STATES, JobState, LeaseAge, run_seconds

REFRESH_SECONDS = 10
SCRIPT = files(__package__).joinpath("dashboard.js").read_text(encoding="utf-8")
# What stands for no value on the page.
DASH = "—"

STATUS_TEXT = {
    "new": "no run yet",
    "ok": "completed",
    "running": "running",
    "late": "due, not done",
    "missed": "deadline passed",
    "overrunning": "over max runtime",
}

STYLE = """
:root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#667085; --line:#e4e7ec;
  --ok:#12805c; --ok-bg:#e3f6ee; --running:#1d5fd1; --running-bg:#e4edfc; --late:#a15c00;
  --late-bg:#fff1d6; --missed:#b42318; --missed-bg:#fde7e5; --over:#7a2fbf; --over-bg:#f1e6fb;
  --new:#475467; --new-bg:#eef0f3; }
@media (prefers-color-scheme: dark) { :root { --bg:#12151b; --card:#1b1f27; --ink:#e6e8ec;
  --muted:#98a2b3; --line:#2b313c; --ok-bg:#12352a; --running-bg:#172a4d; --late-bg:#3d2c0c;
  --missed-bg:#43181a; --over-bg:#32204a; --new-bg:#262b34; --ok:#4ad39a; --running:#7aa7ff;
  --late:#f5b54a; --missed:#ff8a80; --over:#c99bff; --new:#b8c0cc; } }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
  background:var(--bg); color:var(--ink); }
header { display:flex; align-items:baseline; gap:1rem; padding:1.1rem 2rem .4rem; }
header h1 { margin:0; font-size:1.35rem; letter-spacing:.02em; }
header .clock { color:var(--muted); font-size:.9rem; }
main { padding:0 2rem 2rem; max-width:1400px; }
.chips { display:flex; flex-wrap:wrap; gap:.5rem; margin:.6rem 0 1.2rem; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px;
  margin:0 0 1.2rem; overflow:hidden; }
section h2 { font-size:1rem; margin:0; padding:.8rem 1rem; border-bottom:1px solid var(--line); }
table { width:100%; border-collapse:collapse; }
/* Cells wrap, and a long name breaks anywhere: the tables fit their card (a late job's current
   window and deadline must never be scrolled out of sight). */
th, td { text-align:left; padding:.5rem .75rem; border-bottom:1px solid var(--line);
  vertical-align:top; }
td.name { overflow-wrap:anywhere; min-width:8rem; }
th { color:var(--muted); font-weight:600; font-size:.8rem; text-transform:uppercase;
  letter-spacing:.04em; }
tr:last-child td { border-bottom:0; }
.name { font-weight:600; }
.muted { color:var(--muted); }
.mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.88rem; }
.pill { display:inline-block; padding:.1rem .6rem; border-radius:999px; font-weight:600;
  font-size:.82rem; white-space:nowrap; }
.pill.ok { color:var(--ok); background:var(--ok-bg); }
.pill.running { color:var(--running); background:var(--running-bg); }
.pill.late { color:var(--late); background:var(--late-bg); }
.pill.missed, .pill.stuck, .pill.alert { color:var(--missed); background:var(--missed-bg); }
.pill.overrunning { color:var(--over); background:var(--over-bg); }
.pill.new, .pill.free { color:var(--new); background:var(--new-bg); }
.pill.held { color:var(--running); background:var(--running-bg); }
.pill.interrupted { color:var(--late); background:var(--late-bg); }
.pill.unregistered { color:var(--new); background:var(--new-bg); }
.note { padding:.6rem 1rem; margin:0; color:var(--muted); border-top:1px solid var(--line); }
.warn { color:var(--late); font-weight:600; }
.empty { padding:1rem; color:var(--muted); }
.scroll { overflow-x:auto; }
.live { color:var(--muted); font-size:.85rem; }
.live::before { content:"●"; margin-right:.3rem; }
.live[data-state="live"]::before { color:var(--ok); }
.live[data-state="reconnecting"]::before, .live[data-state="connecting"]::before {
  color:var(--late); }
tr.changed td { animation:changed 3s ease-out; }
@media (max-width: 800px) { header { padding:1rem 1rem .4rem; } main { padding:0 1rem 1rem; }
  th, td { padding:.4rem .5rem; } }
@keyframes changed { from { background:var(--running-bg); } }
"""


def plural(count: int, noun: str) -> str:
    """ "1 open alert", "2 open alerts"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _when(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return '<span class="muted">—</span>'
    title = escape(moment.isoformat(timespec="seconds"))
    return f'<span title="{title}">{escape(relative(moment, now))}</span>'


# Pills and schedule cells repeat across a thousand rows: each rendered once per distinct value.
@lru_cache(maxsize=256)
def _pill(kind: str, text: str | None = None) -> str:
    return f'<span class="pill {escape(kind)}">{escape(text or kind)}</span>'


def _job_row(item: Evaluated, now: datetime) -> str:
    job, status = item.job, item.status
    slow = ' <span class="warn" title="last run took more than half the interval">⚠ slow</span>'
    took = duration(status.last_duration_seconds, DASH) + (slow if status.slow else "")
    last = '<span class="muted">—</span>'
    if status.last_completed_window is not None:
        last = (
            f'<span class="mono">{escape(status.last_completed_window)}</span> '
            f'<span class="muted">{_when(status.last_completed_at, now)}</span>'
            f'<br><span class="muted">took</span> {took}'
        )
    current = '<span class="muted">—</span>'
    if status.status not in ("ok", "new"):
        expected = status.expectation
        verb = "was due" if expected.deadline <= now else "due"
        current = (
            f'<span class="mono">{escape(expected.window)}</span> '
            f'<span class="muted">{verb}</span> {_when(expected.deadline, now)}'
        )
    return (
        f'<tr data-job="{escape(job.name)}" data-status="{status.status}">'
        f'<td class="name">{escape(job.name)}</td>'
        f"{_status_cell(status.status)}{_interrupted(status.interrupted_window)}</td>"
        f'<td class="mono">{_schedule(job.spec.schedule, job.spec.timezone)}</td>'
        f"<td>{last}</td>"
        f"<td>{_when(status.expectation.next_occurrence, now)}</td>"
        f"<td>{current}</td></tr>"
    )


@lru_cache(maxsize=16)
def _status_cell(state: JobState) -> str:
    """A status cell's start, up to the interrupted mark."""
    return f'<td title="{escape(STATUS_TEXT[state])}">{_pill(state)}'


@lru_cache(maxsize=1024)
def _schedule(schedule: str, zone: str) -> str:
    return f"{escape(schedule)} <span class='muted'>{escape(zone)}</span>"


def _interrupted(window: str | None) -> str:
    """A mark for a window whose run died: not completed, its lease no longer held by it."""
    if window is None:
        return ""
    title = f"the run that claimed {window} stopped holding its lease without completing it"
    return f' <span title="{escape(title)}">{_pill("interrupted")}</span>'


def _unregistered_row(item: Unregistered, now: datetime) -> str:
    """A job that ran without a schedule: its latest windows, no status (nothing is due)."""
    completed, started = item.facts.last_completed, item.facts.last_started
    last = DASH
    if completed is not None:
        took = duration(run_seconds(completed, now), DASH)
        last = (
            f'<span class="mono">{escape(completed.window)}</span> '
            f'<span class="muted">{_when(completed.completed_at, now)}</span>'
            f'<br><span class="muted">took</span> {took}'
        )
    current = '<span class="muted">—</span>'
    if started is not None and started.window.completed_at is None:
        state = started.window.state
        current = f'<span class="mono">{escape(started.window.window)}</span> {_pill(state)}'
    return (
        f'<tr data-job="{escape(item.name)}" data-status="unregistered">'
        f'<td class="name">{escape(item.name)}</td>'
        f'<td title="ran, but no schedule is registered">{_pill("unregistered")}</td>'
        f'<td class="muted">{DASH}</td><td>{last}</td>'
        f'<td class="muted">{DASH}</td><td>{current}</td></tr>'
    )


# Why registering matters, under the jobs table when some job ran unregistered.
UNREGISTERED_NOTE = (
    "<p class='note'>An <b>unregistered</b> job ran without a schedule, so Tenure cannot tell "
    "when a run is late or missed: register it (<code>PUT /v1/jobs/{job}</code>, "
    "<code>tenure run --register</code>); see <a href='/docs#/jobs/put_job_v1_jobs__job__put'>"
    "the API docs</a> and docs/monitoring.md.</p>"
)


def _lease_row(age: LeaseAge) -> str:
    lease = age.lease
    if age.stuck:
        state = _pill("stuck")
    else:
        state = _pill("held") if lease.held else _pill("free", "expired")
    held_for = duration(age.held_for_seconds, DASH) if lease.held else DASH
    expires = duration(lease.expires_in_seconds, DASH) if lease.held else DASH
    return (
        f'<tr data-lease="{escape(lease.name)}" data-held="{str(lease.held).lower()}">'
        f'<td class="name">{escape(lease.name)}</td><td>{state}</td>'
        f'<td class="mono">{escape(lease.holder)}</td><td>{lease.generation}</td>'
        f"<td>{held_for}</td><td>{expires}</td></tr>"
    )


def _alert_row(item: OpenAlert, now: datetime) -> str:
    alert = item.alert
    return (
        f'<tr data-alert="{escape(alert.kind)}"><td>{_pill("alert", alert.kind)}</td>'
        f'<td class="name">{escape(alert.subject)}</td><td class="mono">{escape(alert.window)}</td>'
        f"<td>{escape(alert.summary)}</td><td>{_when(item.opened_at, now)}</td></tr>"
    )


def _event_row(event: NotableEvent, now: datetime) -> str:
    parts = [event.detail or ""]
    if event.holder:
        parts.insert(0, f"holder {event.holder}")
    if event.generation is not None:
        parts.insert(1 if event.holder else 0, f"generation {event.generation}")
    return (
        f"<tr><td>{_when(event.at, now)}</td><td>{escape(event.scope)}</td>"
        f'<td class="name">{escape(event.subject)}</td><td>{escape(event.kind)}</td>'
        f"<td>{escape(' · '.join(part for part in parts if part))}</td></tr>"
    )


def _table(
    title: str, headings: list[str], rows: list[str], empty: str, ident: str, note: str = ""
) -> str:
    if not rows:
        body = f'<p class="empty">{escape(empty)}</p>'
    else:
        head = "".join(f"<th>{escape(heading)}</th>" for heading in headings)
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        body = f'<div class="scroll">{table}</div>{note}'
    return f'<section id="{ident}"><h2>{escape(title)}</h2>{body}</section>'


def render(overview: Overview) -> str:
    now = overview.now
    counts = Counter(item.status.status for item in overview.jobs)
    chips = "".join(
        _pill(state, f"{counts[state]} {state}") for state in JOB_STATES if counts[state]
    )
    interrupted = sum(1 for item in overview.jobs if item.status.interrupted_window) + sum(
        1 for item in overview.unregistered if item.interrupted_window
    )
    if interrupted:
        chips += _pill("interrupted", f"{interrupted} interrupted")
    if overview.unregistered:
        chips += _pill("unregistered", f"{len(overview.unregistered)} unregistered")
    stuck = sum(1 for age in overview.leases if age.stuck)
    if stuck:
        chips += _pill("stuck", f"{stuck} stuck")
    if overview.alerts:
        chips += _pill("alert", plural(len(overview.alerts), "open alert"))
    sections = [
        _table(
            "Jobs",
            [
                "Job",
                "Status",
                "Schedule",
                "Last completed",
                "Next occurrence",
                "Current window",
            ],
            [_job_row(item, now) for item in overview.jobs]
            + [_unregistered_row(item, now) for item in overview.unregistered],
            "No job is registered: PUT /v1/jobs/{job}, or run_once(..., register=...).",
            "jobs",
            UNREGISTERED_NOTE if overview.unregistered else "",
        ),
        _table(
            "Open alerts",
            ["Kind", "Subject", "Window", "Summary", "Opened"],
            [_alert_row(item, now) for item in overview.alerts],
            "No open alert.",
            "alerts",
        ),
        _table(
            "Leases",
            ["Lease", "State", "Holder", "Generation", "Held for", "Expires in"],
            [_lease_row(age) for age in overview.leases],
            "No lease yet.",
            "leases",
        ),
        _table(
            "Recent events",
            ["When", "Scope", "Subject", "Event", "Detail"],
            [_event_row(event, now) for event in overview.events],
            "Nothing notable: no takeover, lost lease, fence rejection or alert.",
            "events",
        ),
    ]
    clock = escape(now.isoformat(timespec="seconds"))
    return (
        f"<!doctype html><html lang='en' data-refresh='{REFRESH_SECONDS}'><head>"
        "<meta charset='utf-8'>"
        f"<noscript><meta http-equiv='refresh' content='{REFRESH_SECONDS}'></noscript>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>Tenure</title><style>{STYLE}</style></head><body>"
        f"<header><h1>Tenure</h1><span class='clock'>database time {clock}</span>"
        f"<span id='live' class='live' data-state='off'>refreshes every {REFRESH_SECONDS} s"
        "</span></header>"
        f"<main><div class='chips'>{chips}</div>{''.join(sections)}</main>"
        f"<script id='live-updates' data-events='{escape(to_json(EVENT_TYPES))}'>{SCRIPT}"
        "</script></body></html>"
    )
