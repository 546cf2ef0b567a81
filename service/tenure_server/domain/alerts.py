"""Which alerts should be open, when an open one is resolved, what a webhook receives, and how
deliveries are retried. Pure: the monitor loop reads the facts and writes the decisions.

An alert is identified by (kind, subject, window): `missed` and `overrunning` are about a job's
window, `stuck` about a lease's generation (its window is the generation). The database holds one
row per identity, so evaluating twice, or on two replicas, opens it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from tenure_server.domain.jobs import Job
from tenure_server.domain.status import (
    Expectation,
    JobFacts,
    LeaseAge,
    LeaseView,
    WindowFacts,
    is_due,
    overrunning,
    run_seconds,
    running_window,
)

AlertKind = Literal["missed", "overrunning", "stuck"]
ALERT_KINDS: tuple[AlertKind, ...] = ("missed", "overrunning", "stuck")
WebhookFormat = Literal["json", "slack"]


@dataclass(frozen=True, slots=True)
class Alert:
    kind: AlertKind
    subject: str
    window: str
    summary: str
    lease: str | None = None
    holder: str | None = None
    generation: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.subject, self.window)


@dataclass(frozen=True, slots=True)
class OpenAlert:
    """An alert as stored: opened, not yet resolved."""

    alert: Alert
    opened_at: datetime


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def job_alerts(job: Job, expectation: Expectation, facts: JobFacts, now: datetime) -> list[Alert]:
    """The alerts a job's facts call for now."""
    alerts: list[Alert] = []
    overdue = facts.windows.get(expectation.overdue_window)
    if is_due(job, expectation.overdue_occurrence, overdue) and not (
        overdue is not None and overdue.completed
    ):
        alerts.append(
            Alert(
                kind="missed",
                subject=job.name,
                window=expectation.overdue_window,
                summary=(
                    f"job {job.name}: window {expectation.overdue_window} was not completed within"
                    f" {job.spec.deadline_seconds:g} s of its occurrence"
                    f" {_iso(expectation.overdue_occurrence)}"
                ),
                lease=job.spec.lease,
            )
        )
    running = running_window(facts)
    if running is not None and overrunning(job, facts, now):
        window = running.window
        alerts.append(
            Alert(
                kind="overrunning",
                subject=job.name,
                window=window.window,
                summary=(
                    f"job {job.name}: the run of window {window.window} has taken"
                    f" {run_seconds(window, now):.0f} s, more than its max runtime of"
                    f" {job.spec.max_runtime_seconds:g} s"
                ),
                lease=window.lease,
                holder=window.holder,
                generation=window.generation,
            )
        )
    return alerts


def stuck_alert(age: LeaseAge) -> Alert | None:
    if not age.stuck:
        return None
    lease = age.lease
    return Alert(
        kind="stuck",
        subject=lease.name,
        window=str(lease.generation),
        summary=(
            f"lease {lease.name}: generation {lease.generation} held by {lease.holder} for"
            f" {age.held_for_seconds:.0f} s, more than {age.bound_seconds:g} s"
        ),
        lease=lease.name,
        holder=lease.holder,
        generation=lease.generation,
    )


def resolution(
    alert: Alert, *, job_active: bool, window: WindowFacts | None, lease: LeaseView | None
) -> str | None:
    """Why an open alert is over, or None while it still stands.

    A job's alert is resolved when its window completes (or the job is deleted); a stuck lease's
    when that generation is no longer held.
    """
    if alert.kind == "stuck":
        if lease is None or not lease.held or str(lease.generation) != alert.window:
            return f"lease {alert.subject}: generation {alert.window} is no longer held"
        return None
    if window is not None and window.completed:
        return f"job {alert.subject}: window {alert.window} completed"
    if not job_active:
        return f"job {alert.subject} was deleted"
    return None


def notification(
    alert: Alert, transition: Literal["opened", "resolved"], at: datetime, detail: str
) -> dict[str, Any]:
    """The generic JSON webhook payload. `id` is the same for every delivery attempt of this
    transition, so a receiver can drop a repeat."""
    return {
        "id": f"{alert.kind}/{alert.subject}/{alert.window}/{transition}",
        "source": "tenure",
        "event": f"alert.{transition}",
        "status": "firing" if transition == "opened" else "resolved",
        "kind": alert.kind,
        "job": None if alert.kind == "stuck" else alert.subject,
        "lease": alert.lease,
        "window": alert.window,
        "holder": alert.holder,
        "generation": alert.generation,
        "summary": detail,
        "at": at.isoformat(),
    }


def render(fmt: WebhookFormat, payload: Mapping[str, Any]) -> dict[str, Any]:
    """What is posted to a webhook of this format. Slack incoming webhooks take `text`."""
    if fmt == "json":
        return dict(payload)
    icon = ":rotating_light:" if payload.get("status") == "firing" else ":white_check_mark:"
    state = "FIRING" if payload.get("status") == "firing" else "RESOLVED"
    return {"text": f"{icon} *Tenure {state}* {payload.get('kind')}: {payload.get('summary')}"}


def target_id(fmt: WebhookFormat, url: str) -> str:
    """How a webhook is named in the database: its format and a hash of its URL (URLs are secrets,
    Slack's especially)."""
    return f"{fmt}:{hashlib.sha256(url.encode()).hexdigest()[:16]}"


def retry_delay(attempt: int, base_seconds: float, max_seconds: float) -> float:
    """Exponential backoff after failed attempt number `attempt` (1, 2, …)."""
    return float(min(max_seconds, base_seconds * 2 ** min(attempt - 1, 30)))


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook delivery claimed for sending: `attempt` is the claim's number."""

    id: int
    target: str
    payload: Mapping[str, Any]
    attempt: int
