"""Gauges of state read from the database when /metrics is scraped (cached for
`metrics_cache_seconds`): job status, lease ages, open alerts, readiness. Every replica reports
the same values: aggregate them with max(), not sum() (docs/monitoring.md, "Metrics")."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from datetime import datetime

from tenure_server.adapters.exposition import Gauge, GaugeText, StateSet
from tenure_server.app.status import Overview
from tenure_server.domain.alerts import ALERT_KINDS
from tenure_server.domain.errors import TenureError
from tenure_server.domain.status import JOB_STATES

_log = logging.getLogger("tenure.telemetry")


class DatabaseGauges:
    """The state gauges of the last snapshot read from the database, and readiness."""

    def __init__(self, cache_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._taken_at: float | None = None
        self._status = GaugeText()
        self._state = GaugeText()
        self._text = ""  # the state gauges of the last snapshot
        self._up = 0.0
        self._ready = 0.0
        self._refreshing = asyncio.Lock()

    async def refresh(
        self,
        read: Callable[[], Awaitable[Iterable[Gauge | StateSet]]],
        ready: Callable[[], Awaitable[bool]],
    ) -> None:
        """Check readiness and read the gauges again when the snapshot is older than the cache
        time; one reader at a time, so a burst of scrapes costs one check and one read."""
        async with self._refreshing:
            if not self.stale():
                return
            self._ready = 1.0 if await ready() else 0.0
            if not self._ready:
                # Unreachable or behind this version's schema: a read would wait as long again,
                # or read tables this version does not know.
                self.failed()
                return
            try:
                self.update(await read())
            except TenureError as error:
                _log.warning("metrics: state gauges unavailable: %s", error.detail)
                self.failed()

    def stale(self) -> bool:
        return self._taken_at is None or self._clock() - self._taken_at >= self._cache_seconds

    def update(self, gauges: Iterable[Gauge | StateSet]) -> None:
        self._text = self._state.render(gauges)
        self._taken_at = self._clock()
        self._up = 1.0

    def failed(self) -> None:
        """The database could not be read: serve no state gauges rather than stale ones."""
        self._text = ""
        self._taken_at = self._clock()
        self._up = 0.0

    def texts(self) -> Iterator[str]:
        """The gauges as exposition text (`exposition.Texts`): the snapshot's, made once."""
        yield self._status.render(
            (
                Gauge(
                    "tenure_database_up",
                    "1 when the state gauges could be read from the database.",
                    (),
                    (((), self._up),),
                ),
                Gauge(
                    "tenure_ready",
                    "1 when this replica is ready: the /readyz check passes.",
                    (),
                    (((), self._ready),),
                ),
            )
        )
        yield self._text


def state_gauges(overview: Overview, backlog: dict[str, int]) -> list[Gauge | StateSet]:
    """The state gauges of one overview read (documented in docs/metrics.md)."""
    jobs = overview.jobs
    held = [age for age in overview.leases if age.lease.held]

    def per_job(values: Iterable[tuple[str, float | None]]) -> tuple[tuple[tuple[str], float], ...]:
        return tuple(((name,), value) for name, value in values if value is not None)

    def flags(values: Iterable[tuple[str, str | None]]) -> tuple[tuple[tuple[str], float], ...]:
        return tuple(((name,), float(window is not None)) for name, window in values)

    return [
        StateSet(
            "tenure_job_status",
            "1 for the job's current status, 0 for the others.",
            ("job", "status"),
            JOB_STATES,
            tuple((item.job.name, item.status.status) for item in jobs),
        ),
        Gauge(
            "tenure_job_last_duration_seconds",
            "Duration of the job's last completed run.",
            ("job",),
            per_job((item.job.name, item.status.last_duration_seconds) for item in jobs),
        ),
        Gauge(
            "tenure_job_last_completion_timestamp_seconds",
            "When the job's last window was completed (Unix time).",
            ("job",),
            per_job((item.job.name, _timestamp(item.status.last_completed_at)) for item in jobs),
        ),
        Gauge(
            "tenure_job_next_occurrence_timestamp_seconds",
            "The job's next expected occurrence (Unix time).",
            ("job",),
            per_job(
                (item.job.name, item.status.expectation.next_occurrence.timestamp())
                for item in jobs
            ),
        ),
        Gauge(
            "tenure_job_slow",
            "1 when the job's last run took more than half its interval.",
            ("job",),
            per_job((item.job.name, float(item.status.slow)) for item in jobs),
        ),
        Gauge(
            "tenure_job_interrupted",
            "1 when the job's latest window was left by a run that died (not completed, its "
            "lease no longer held by that run); registered and unregistered jobs.",
            ("job",),
            per_job(
                [
                    (item.job.name, float(item.status.interrupted_window is not None))
                    for item in jobs
                ]
                + [
                    (item.name, float(item.interrupted_window is not None))
                    for item in overview.unregistered
                ]
            ),
        ),
        Gauge(
            "tenure_lease_holding_age_seconds",
            "How long the current generation of a held lease has been held.",
            ("lease",),
            tuple(((age.lease.name,), age.held_for_seconds) for age in held),
        ),
        Gauge(
            "tenure_lease_generation",
            "The current generation of a held lease.",
            ("lease",),
            tuple(((age.lease.name,), float(age.lease.generation)) for age in held),
        ),
        Gauge(
            "tenure_lease_stuck",
            "1 when one generation has been held longer than its bound.",
            ("lease",),
            tuple(((age.lease.name,), float(age.stuck)) for age in held),
        ),
        Gauge(
            "tenure_alerts_open",
            "Alerts opened and not yet resolved, by kind.",
            ("kind",),
            tuple(((kind,), float(backlog.get(f"open:{kind}", 0))) for kind in ALERT_KINDS),
        ),
        Gauge(
            "tenure_webhook_deliveries_pending",
            "Webhook deliveries not yet delivered nor given up.",
            (),
            (((), float(backlog.get("pending", 0))),),
        ),
    ]


def _timestamp(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()
