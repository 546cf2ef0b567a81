"""The monitor loop: evaluates jobs and leases, opens and resolves alerts, sends webhooks, and
prunes old history.

Every replica runs the loop; exactly one does the work at a time. Each pass acquires the lease
`tenure.monitor` through the service's own `Operations` (the service uses its own product), as
the service's own principal: the holder extends it, the others find it held and stand by, and
when the holder dies another takes over after the TTL. No caller may act under `tenure.` names,
and a holding of the lease by anything but the service (a client's from before that rule) is not
honoured: the pass takes it over at once. Alert writes are fenced by that holding in SQL (FOR
SHARE on the lease row in the same statement), and the alert table has one row per (kind,
subject, window), so two replicas, a restart or a paused former holder never open an alert twice
nor lose one.

Webhooks are sent by a second task from an outbox filled in the same statements as the alerts;
each POST has a timeout, failures are retried with backoff, and a slow or failing webhook never
delays an evaluation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx

from tenure_server.adapters.telemetry import Metrics
from tenure_server.adapters.webhooks import RetryPolicy, WebhookTarget, send
from tenure_server.app.operations import Operations
from tenure_server.app.reserved import take_back
from tenure_server.app.status import Evaluated, StatusReader
from tenure_server.db.monitoring import Fenced, Monitoring
from tenure_server.domain.alerts import (
    Alert,
    OpenAlert,
    job_alerts,
    notification,
    resolution,
    stuck_alert,
)
from tenure_server.domain.errors import LeaseHeld, TenureError
from tenure_server.domain.events import AlertEvent, EventSink
from tenure_server.domain.principals import SERVICE_PRINCIPAL
from tenure_server.domain.status import LeaseView, lease_age
from tenure_server.domain.windows import Holding

_log = logging.getLogger("tenure.monitor")

MONITOR_LEASE = "tenure.monitor"
DELIVERY_BATCH = 20
PRUNE_BATCHES_PER_PASS = 10
RELEASE_TIMEOUT_SECONDS = 2.0
_FIRST = ("", "", "")


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    interval_seconds: float
    lease_ttl_seconds: float
    stuck_after_seconds: float
    retention_seconds: float
    retention_batch: int
    # Open alerts judged per pass, a page in key order; the next pass takes the next page.
    open_alerts_per_pass: int
    # Jobs evaluated per pass, a page in name order; the next pass takes the next page.
    jobs_per_pass: int
    # Leases examined for `stuck` per pass: the held ones held longest.
    leases_per_pass: int
    webhooks: tuple[WebhookTarget, ...]
    retry: RetryPolicy


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Monitor:
    def __init__(
        self,
        config: MonitorConfig,
        operations: Operations,
        reader: StatusReader,
        monitoring: Monitoring,
        sink: EventSink,
        metrics: Metrics,
        holder: str | None = None,
    ) -> None:
        self._config = config
        self._operations = operations
        self._reader = reader
        self._monitoring = monitoring
        self._sink = sink
        self._metrics = metrics
        self.holder = holder or default_holder()
        self.holding: Holding | None = None
        # The latest acquire's grant: the release at stop names it (it is required).
        self._grant: str | None = None
        self._targets = {target.id: target for target in config.webhooks}
        # Where the next page of open alerts starts: after this key (("", "", ""): the first).
        self._turn = _FIRST
        # Where the next page of jobs starts: after this name ("": the first).
        self._job_turn = ""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        self._http = httpx.AsyncClient(follow_redirects=False)
        self._tasks = [
            asyncio.create_task(self._evaluate_forever(), name="tenure-monitor"),
            asyncio.create_task(self._deliver_forever(), name="tenure-webhooks"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        holding, self.holding = self.holding, None
        if holding is not None and self._grant is not None:
            # Hand over at once instead of after the TTL.
            with contextlib.suppress(TenureError, TimeoutError):
                async with asyncio.timeout(RELEASE_TIMEOUT_SECONDS):
                    await self._operations.release(
                        holding.lease,
                        holding.holder,
                        holding.generation,
                        holding.principal,
                        self._grant,
                    )
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _evaluate_forever(self) -> None:
        # The first pass waits one interval: replicas starting together settle first.
        while True:
            await asyncio.sleep(self._config.interval_seconds)
            try:
                await self.run_pass()
            except Exception:  # one bad pass must not end monitoring
                _log.exception("monitor pass failed", extra={"event": "monitor.failed"})

    async def run_pass(self) -> bool:
        """One evaluation; False when another replica holds the monitor lease. Counted and timed
        by role (`leader`, `standby`, `error`)."""
        started = time.monotonic()
        try:
            led = await self._pass()
        except Exception:
            self._metrics.monitor_pass("error", time.monotonic() - started)
            raise
        self._metrics.monitor_pass("leader" if led else "standby", time.monotonic() - started)
        return led

    async def _pass(self) -> bool:
        holding = await self._hold()
        if holding is None:
            return False
        try:
            await self._evaluate(holding, await self._reader.now())
            await self._prune()
        except Fenced:
            _log.warning("monitor lease lost during a pass", extra={"event": "monitor.fenced"})
            self.holding = None
            return False
        self._wake.set()
        return True

    async def _hold(self) -> Holding | None:
        # Before the acquire: a holding by anything but the service would make it stand by.
        await take_back(self._monitoring, MONITOR_LEASE)
        try:
            lease = await self._operations.acquire(
                MONITOR_LEASE,
                self.holder,
                self._config.lease_ttl_seconds,
                principal=SERVICE_PRINCIPAL,
            )
        except LeaseHeld:
            self.holding = None
            return None
        self.holding = Holding(MONITOR_LEASE, self.holder, lease.generation, SERVICE_PRINCIPAL)
        self._grant = lease.grant_id
        return self.holding

    async def _evaluate(self, holding: Holding, now: datetime) -> None:
        # The leases do not depend on the jobs' reads: read beside them, each statement on a
        # pooled connection of its own, so that a pass waits for the longer, not for both.
        (evaluated, current), leases = await asyncio.gather(
            self._evaluate_jobs(now),
            self._monitoring.monitored_leases(self._config.leases_per_pass),
        )
        leases = await self._with_alerted_leases(leases, current)
        wanted: list[Alert] = []
        for job in evaluated:
            wanted.extend(job_alerts(job.job, job.expectation, job.facts, now))
        for lease, max_runtime in leases:
            age = lease_age(lease, now, self._config.stuck_after_seconds, max_runtime)
            alert = stuck_alert(age)
            if alert is not None and alert.subject != MONITOR_LEASE:
                wanted.append(alert)
        await self._open(holding, wanted, {item.alert.key for item in current}, now)
        facts = {job.job.name: job.facts for job in evaluated}
        by_lease = {lease.name: lease for lease, _ in leases}
        for existing in current:
            alert = existing.alert
            job_facts = facts.get(alert.subject)
            reason = resolution(
                alert,
                job_active=job_facts is not None,
                window=None if job_facts is None else job_facts.windows.get(alert.window),
                lease=by_lease.get(alert.subject),
            )
            if reason is not None:
                await self._resolve(holding, alert, reason, now)

    async def _evaluate_jobs(self, now: datetime) -> tuple[list[Evaluated], list[OpenAlert]]:
        """This pass's page of jobs, and the jobs of its page of open alerts beyond it, each
        with its status and the windows of those alerts; and that page of open alerts."""
        page, jobs_page = self._config.open_alerts_per_pass, self._config.jobs_per_pass
        jobs, current = await asyncio.gather(
            self._reader.jobs_after(self._job_turn, jobs_page),
            self._monitoring.open_alerts_after(self._turn, page),
        )
        # A short page was the last: the next pass starts again from the first.
        self._turn = current[-1].alert.key if len(current) == page else _FIRST
        self._job_turn = jobs[-1].name if len(jobs) == jobs_page else ""
        job_windows = [
            (item.alert.subject, item.alert.window)
            for item in current
            if item.alert.kind != "stuck"
        ]
        # An alert's job not in the page is read by name: missing, it is gone (deleted).
        beyond = {job for job, _ in job_windows} - {job.name for job in jobs}
        if beyond:
            jobs = [*jobs, *await self._reader.jobs_named(sorted(beyond))]
        return await self._reader.evaluate(jobs, now, job_windows, overdue=True), current

    async def _with_alerted_leases(
        self, leases: list[tuple[LeaseView, float | None]], current: Sequence[OpenAlert]
    ) -> list[tuple[LeaseView, float | None]]:
        """The leases examined, and those of the page's stuck alerts beyond them, read by
        name: a stuck alert is resolved only on seeing its generation no longer held."""
        examined = {lease.name for lease, _ in leases}
        beyond = {item.alert.subject for item in current if item.alert.kind == "stuck"}
        beyond -= examined
        if not beyond:
            return leases
        return [*leases, *await self._monitoring.monitored_leases(0, sorted(beyond))]

    async def _open(
        self,
        holding: Holding,
        wanted: Sequence[Alert],
        known: set[tuple[str, str, str]],
        now: datetime,
    ) -> None:
        """Open the wanted alerts not in this pass's page, in one statement whatever their
        number: those open beyond the page are found open by the database, not opened again."""
        unknown = {alert.key: alert for alert in wanted if alert.key not in known}
        if not unknown:
            return
        opened = await self._monitoring.open_new_alerts(
            holding,
            [
                (alert, notification(alert, "opened", now, alert.summary))
                for alert in unknown.values()
            ],
            self._target_ids(),
        )
        self._sink.record_many(
            [AlertEvent("opened", a.kind, a.subject, a.window, a.summary) for a in opened]
        )

    async def _resolve(self, holding: Holding, alert: Alert, reason: str, now: datetime) -> None:
        payload = notification(alert, "resolved", now, reason)
        if await self._monitoring.resolve_alert(
            holding, alert, reason, payload, self._target_ids()
        ):
            self._sink.record(
                AlertEvent("resolved", alert.kind, alert.subject, alert.window, reason)
            )

    def _target_ids(self) -> Sequence[str]:
        return list(self._targets)

    async def _prune(self) -> None:
        batch = self._config.retention_batch
        for _ in range(PRUNE_BATCHES_PER_PASS):
            removed = await self._monitoring.prune_events(self._config.retention_seconds, batch)
            if removed < batch:
                return

    async def _deliver_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._config.interval_seconds):
                    await self._wake.wait()
            self._wake.clear()
            try:
                if await self.deliver_due() == DELIVERY_BATCH:
                    self._wake.set()  # more may be due
            except Exception:  # a failing delivery round must not end deliveries
                _log.exception("webhook round failed", extra={"event": "webhook.round_failed"})

    async def deliver_due(self) -> int:
        """Send the deliveries that are due, concurrently; how many were claimed."""
        holding, client = self.holding, self._http
        if holding is None or client is None:
            return 0
        retry = self._config.retry
        try:
            claimed = await self._monitoring.claim_deliveries(
                holding, DELIVERY_BATCH, retry.timeout_seconds * 2 + 1
            )
        except Fenced:
            return 0
        outcomes = await asyncio.gather(
            *(send(client, self._targets, delivery, retry) for delivery in claimed)
        )
        for delivery, outcome in zip(claimed, outcomes, strict=True):
            self._metrics.webhook_attempts.labels(outcome.format, outcome.result).inc()
            await self._monitoring.record_attempt(
                delivery,
                ok=outcome.ok,
                status_code=outcome.status_code,
                error=outcome.error,
                duration=outcome.duration,
                retry_in=outcome.retry_in,
            )
        return len(claimed)
