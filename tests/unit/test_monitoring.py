"""Pieces of monitoring that need no database: the statement files and their repositories, JSON
logs, bounded metric labels, the dashboard's escaping, and `tenure status` tables."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

from prometheus_client import generate_latest

from tenure._models import Overview
from tenure._status import render_overview
from tenure_server.adapters.telemetry import OTHER, BoundedNames, Metrics
from tenure_server.api import dashboard
from tenure_server.app import status as db_status
from tenure_server.domain.events import FENCE_REJECTIONS, LeaseEvent, WindowEvent
from tenure_server.domain.status import LeaseAge, LeaseView
from tenure_server.server.logs import JsonFormatter

NOW = datetime(2026, 9, 25, 3, 0, tzinfo=UTC)


def test_json_logs_are_one_object_per_line_with_the_event_fields() -> None:
    """A record becomes one line of JSON holding its `extra` fields at the top level."""
    record = logging.LogRecord(
        "tenure.events", logging.WARNING, "f", 1, "lease.taken_over", (), None
    )
    record.event = "lease.taken_over"
    record.previous_holder = "a"
    record.at = NOW
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "warning"
    assert entry["event"] == "lease.taken_over"
    assert entry["previous_holder"] == "a"
    assert entry["at"] == str(NOW)


def test_label_values_are_bounded() -> None:
    """Past the limit, new names are counted under one label value."""
    names = BoundedNames(limit=2)
    assert [names(name) for name in ("a", "b", "c", "a")] == ["a", "b", OTHER, "a"]


def test_a_names_counters_start_at_zero_when_it_is_first_seen() -> None:
    """increase() does not count a series' first sample: the refusal, loss and rejection series of
    a lease exist at zero from its first event on, so the next one is counted by the alerts."""
    metrics = Metrics()
    metrics.observe(LeaseEvent("acquired", "close-day", "a", 1))
    metrics.observe(WindowEvent("claimed", "nightly", "2026-09-25", "close-day", "a", 1, 1))
    text = generate_latest(metrics.registry).decode()
    for series in (
        'tenure_lease_renew_refusals_total{lease="close-day"} 0.0',
        'tenure_lease_takeovers_total{lease="close-day"} 0.0',
        'tenure_lease_refusals_total{lease="close-day"} 0.0',
        *(
            f'tenure_fence_rejections_total{{lease="close-day",reason="{reason}"}} 0.0'
            for reason in FENCE_REJECTIONS
        ),
        'tenure_window_completions_total{job="nightly"} 0.0',
    ):
        assert series in text


def test_the_other_name_is_started_once() -> None:
    started: list[str] = []
    names = BoundedNames(started.append, limit=1)
    assert [names("a"), names("b"), names("c"), names("a")] == ["a", OTHER, OTHER, "a"]
    assert started == ["a", OTHER]


def test_dashboard_escapes_what_clients_chose() -> None:
    """Holder and lease names are shown as text, never as markup."""
    start = NOW - timedelta(minutes=5)
    view = LeaseView("x<script>", "<img src=x onerror=alert(1)>", 3, start, NOW, True, 30)
    page = dashboard.render(
        db_status.Overview(now=NOW, jobs=[], leases=[LeaseAge(view, 300, 3600)], alerts=[],
                           events=[])
    )  # fmt: skip
    assert "<img" not in page
    assert "<script>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "5 min 0 s" in page


def test_status_tables() -> None:
    """`tenure status` prints each section as aligned columns, or "(none)"."""
    overview = Overview.from_json(
        {
            "now": NOW.isoformat(),
            "jobs": [],
            "leases": [
                {
                    "name": "close-day",
                    "holder": "host-1",
                    "generation": 7,
                    "held": True,
                    "held_for_seconds": 75,
                    "expires_in_seconds": 42,
                    "stuck": False,
                    "acquired_at": NOW.isoformat(),
                }
            ],
            "alerts": [],
            "events": [],
        }
    )
    text = render_overview(overview)
    assert "JOBS\n(none)" in text
    lines = text.splitlines()
    header = lines[lines.index("LEASES") + 1]
    row = lines[lines.index("LEASES") + 2]
    assert header.split() == ["LEASE", "STATE", "HOLDER", "GEN", "HELD", "FOR", "EXPIRES", "IN"]
    assert row.split() == ["close-day", "held", "host-1", "7", "1", "min", "15", "s", "42", "s"]
    assert header.index("HOLDER") == row.index("host-1")
