"""Every type the stream sends is shown by each of its readers: `tenure status --watch`
(`render_event`) and /ui's script (dashboard.js, handed the service's one list), and documented
in docs/monitoring.md; and the page's chips count in words a person would write."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import pytest

from tenure import StreamEvent
from tenure._status import render_event
from tenure_server.api import dashboard
from tenure_server.app import status as db_status
from tenure_server.app.stream_wire import EVENT_TYPES, streamed
from tenure_server.domain.alerts import Alert, OpenAlert
from tenure_server.domain.events import Event
from tests.unit.test_event_hub import ONE_OF_EACH

NOW = datetime(2026, 9, 25, 3, 0, tzinfo=UTC)
MONITORING_DOC = Path(__file__).resolve().parents[2] / "docs" / "monitoring.md"


def words(line: str) -> set[str]:
    return set(re.split(r"[\s:,()]+", line))


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda event: event.name)
def test_watch_renders_every_streamed_type_with_its_facts(event: Event) -> None:
    """The line names the event's subject and shows each of its names and numbers (a fence
    rejection's resource, lease, generation, reason and highest; who force-released a lease)."""
    found = streamed(event, 0.0)
    assert found is not None
    _, data = found
    line = render_event(StreamEvent("p-1", data["type"], data))
    kind, name = line.split("  ")[1:3]
    assert (kind, name) != (data["type"], "-"), line
    shown = words(line)
    for key, value in data.items():
        if key not in ("type", "at") and isinstance(value, str | int):
            assert str(value).strip("()") in shown, (key, line)


def test_the_pages_script_follows_every_streamed_type() -> None:
    """/ui's script listens to the list the page hands it, which is the service's list of
    streamed types; the script names no type itself, so it cannot miss a new one."""
    page = dashboard.render(db_status.Overview(now=NOW, jobs=[], leases=[], alerts=[], events=[]))
    handed = re.search(r"<script id='live-updates' data-events='([^']*)'>", page)
    assert handed is not None
    assert json.loads(unescape(handed.group(1))) == list(EVENT_TYPES)
    assert "fence.rejected" in EVENT_TYPES
    assert "lease.force_released" in EVENT_TYPES
    for kind in EVENT_TYPES:
        assert f'"{kind}"' not in dashboard.SCRIPT


def test_every_streamed_type_is_documented() -> None:
    """docs/monitoring.md's table of stream events has a row naming each streamed type."""
    section = MONITORING_DOC.read_text().split("\n## Event stream\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    for kind in EVENT_TYPES:
        assert any(f"`{kind}`" in row.split(" | ")[0] for row in rows), kind


def alerts(count: int) -> list[OpenAlert]:
    opened = NOW - timedelta(minutes=5)
    return [
        OpenAlert(Alert("missed", f"job-{index}", "2026-09-25", "deadline passed"), opened)
        for index in range(count)
    ]


@pytest.mark.parametrize(("count", "chip"), [(1, "1 open alert<"), (2, "2 open alerts<")])
def test_the_alert_chip_is_pluralised(count: int, chip: str) -> None:
    """One open alert is "1 open alert", two are "2 open alerts"."""
    overview = db_status.Overview(now=NOW, jobs=[], leases=[], alerts=alerts(count), events=[])
    assert chip in dashboard.render(overview)
