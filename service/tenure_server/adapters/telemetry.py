"""Prometheus metrics and the event sink that feeds them and the structured logs.

Three kinds of metrics, chosen for what each must mean (docs/monitoring.md lists every one):

- Counters and histograms count what this process served (acquisitions, refusals, takeovers,
  request latency, …). Under several uvicorn workers they are shared through prometheus-client's
  multiprocess mode: `tenure serve --workers N` points PROMETHEUS_MULTIPROC_DIR at a fresh folder
  before the workers start, and /metrics sums the workers' files, so every scrape of a replica
  sees the whole replica whichever worker answers. Sum them over replicas in PromQL.
- Gauges of state (job status, lease age, open alerts; adapters/state_gauges.py) are read from the
  database, the one authority, when /metrics is scraped, cached for `metrics_cache_seconds`.
  Every replica reports the same values: aggregate them with max(), not sum(). `tenure_ready` is
  read with them: 1 when this replica passes the /readyz check.
- Gauges of this replica's database pools (adapters/pool_gauges.py): every worker's own figures,
  summed over the live workers; sum them over replicas too.

Label values are bounded: lease and job names (never holders, window keys or resources), and at
most MAX_NAMES distinct names per label per process; later names are counted under "_other".
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from tenure_server.adapters.database_clock import DatabaseClockMetrics
from tenure_server.adapters.exposition import Exposition, Gauge, StateSet
from tenure_server.adapters.pool_gauges import PoolGauges, forget_dead_workers
from tenure_server.adapters.state_gauges import DatabaseGauges, state_gauges
from tenure_server.adapters.worker_metrics import WorkerMetrics
from tenure_server.app.status import Overview
from tenure_server.domain.events import (
    CATALOGUE,
    FENCE_REJECTIONS,
    Event,
    EventType,
    event_fields,
)

_events = logging.getLogger("tenure.events")


def _observed(entry: EventType) -> tuple[str, ...]:
    """The attributes of an event of this type that its metrics read: their label values, and
    the values their histograms observe."""
    family = entry.family
    return tuple(
        dict.fromkeys(
            [
                *(
                    label if label == family.metric_name else family.attribute(label)
                    for count in entry.counts
                    for label in count.labels
                ),
                *(count.observe for count in entry.counts if count.observe is not None),
            ]
        )
    )


# By event name: what `Metrics.observe_many` tells events alike by, the event's name and the
# attributes its metrics read, read at once by one C-level attrgetter.
_ALIKE = {name: attrgetter("name", *_observed(entry)) for name, entry in CATALOGUE.items()}
_log = logging.getLogger("tenure.telemetry")

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
MAX_NAMES = 1000
OTHER = "_other"
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RUN_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
# A monitor pass: milliseconds on a small deployment, and a pass nearing the interval (15 s by
# default) is what an operator must see coming.
Buckets = tuple[float, ...]
MONITOR_PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0)


class BoundedNames:
    """The first MAX_NAMES distinct values pass through; later ones become "_other". `on_new` is
    called once for each value that passes, "_other" included, the first time it does."""

    def __init__(
        self, on_new: Callable[[str], None] = lambda _: None, limit: int = MAX_NAMES
    ) -> None:
        self._limit = limit
        self._on_new = on_new
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, name: str) -> str:
        # Without the lock first: every event asks, and the set only grows (once full, it stays).
        seen = self._seen
        if name in seen:
            return name
        if len(seen) >= self._limit and OTHER in seen:
            return OTHER
        with self._lock:
            if name in self._seen:
                return name
            if len(self._seen) >= self._limit:
                name = OTHER
                if OTHER in self._seen:
                    return OTHER
            self._seen.add(name)
        self._on_new(name)
        return name


class Metrics:
    """The counters and histograms of one app, in its own registry (no module-level state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.lease = BoundedNames(self._start_lease)
        self.job = BoundedNames(self._start_job)
        self._bounded = {"lease": self.lease, "job": self.job}
        # By name, what each event type adds to as the catalogue names it (domain/events.py).
        self.counters: dict[str, Counter] = {}
        self.histograms: dict[str, Histogram] = {}
        # Each labelled series an event has added to, by metric and label values: `labels()`
        # validates and locks on every call, and cost as much as the increment it precedes
        # (bench/README.md, step 25). As many as the series, which the label values bound.
        self._series: dict[tuple[Any, ...], Any] = {}

        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            made = self.counters[name] = Counter(name, doc, labels, registry=self.registry)
            return made

        def histogram(name: str, doc: str, labels: tuple[str, ...], buckets: Buckets) -> Histogram:
            made = self.histograms[name] = Histogram(
                name, doc, labels, buckets=buckets, registry=self.registry
            )
            return made

        self.acquisitions = counter(
            "tenure_lease_acquisitions", "New holdings: free or expired leases taken.", ("lease",)
        )
        self.takeovers = counter(
            "tenure_lease_takeovers",
            "Holdings taken from an expired holder that never released.",
            ("lease",),
        )
        self.refusals = counter(
            "tenure_lease_refusals",
            "Acquires refused because another holder holds the lease (skipped runs).",
            ("lease",),
        )
        self.renew_refusals = counter(
            "tenure_lease_renew_refusals",
            "Renewals refused: leases lost by their holder.",
            ("lease",),
        )
        self.releases = counter("tenure_lease_releases", "Holdings released.", ("lease",))
        self.claims = counter("tenure_window_claims", "Windows claimed (attempts).", ("job",))
        self.completions = counter("tenure_window_completions", "Windows completed.", ("job",))
        self.fence_accepts = counter(
            "tenure_fence_accepts", "Fence verifications accepted.", ("lease",)
        )
        self.fence_rejections = counter(
            "tenure_fence_rejections",
            "Fence verifications refused, by reason.",
            ("lease", "reason"),
        )
        self.alerts = counter(
            "tenure_alerts", "Alerts opened and resolved by this process.", ("kind", "transition")
        )
        self.webhook_attempts = counter(
            "tenure_webhook_attempts",
            "Webhook delivery attempts, by outcome.",
            ("format", "result"),
        )
        self.monitor_passes = counter(
            "tenure_monitor_passes", "Monitor loop passes, by role of this replica.", ("role",)
        )
        self.requests = histogram(
            "tenure_http_request_duration_seconds",
            "HTTP request latency, by method, route template and status code.",
            ("method", "route", "status"),
            REQUEST_BUCKETS,
        )
        self.run_durations = histogram(
            "tenure_job_run_duration_seconds",
            "Duration of completed runs (claim to completion of a window).",
            ("job",),
            RUN_BUCKETS,
        )
        self.monitor_pass_durations = histogram(
            "tenure_monitor_pass_duration_seconds",
            "Duration of monitor loop passes, by role of this replica.",
            ("role",),
            MONITOR_PASS_BUCKETS,
        )

    # A labelled counter appears at its first event, and increase() does not count a series'
    # first sample: a name's counters start at zero when it is first seen, so that a later
    # refusal, loss or rejection is counted by the alert rules (helm/tenure/files).
    def _start_lease(self, lease: str) -> None:
        for counter in (
            self.acquisitions,
            self.takeovers,
            self.refusals,
            self.renew_refusals,
            self.releases,
            self.fence_accepts,
        ):
            counter.labels(lease)
        for reason in FENCE_REJECTIONS:
            self.fence_rejections.labels(lease, reason)

    def _start_job(self, job: str) -> None:
        self.claims.labels(job)
        self.completions.labels(job)

    def observe(self, event: Event, entry: EventType | None = None, times: int = 1) -> None:
        """Add the event to the metrics its catalogue entry names (`entry`, when the caller
        looked it up already), `times` times: a counter by `times`, a histogram by each."""
        entry = CATALOGUE[event.name] if entry is None else entry
        family = entry.family
        bounded = family.metric_name
        name = None if bounded is None else self._bounded[bounded](getattr(event, bounded))
        for count in entry.counts:
            key = (
                count.metric,
                *[
                    name if label == bounded else getattr(event, family.attribute(label))
                    for label in count.labels
                ],
            )
            if count.observe is None:
                self._labelled(key, self.counters).inc(times)
            else:
                value = getattr(event, count.observe)
                if value is not None:
                    histogram = self._labelled(key, self.histograms)
                    for _ in range(times):
                        histogram.observe(value)

    def _labelled(self, key: tuple[Any, ...], metrics: Mapping[str, Counter | Histogram]) -> Any:
        """The series of `key` (metric, label values...), found once by `labels()` and kept."""
        series = self._series.get(key)
        if series is None:
            metric, *values = key
            series = self._series[key] = metrics[metric].labels(*values)
        return series

    def observe_many(self, events: Sequence[Event]) -> set[str]:
        """`observe` each event, events alike counted together: those of one type whose metrics
        read the same values (labels, and what a histogram observes) add to the metrics once, by
        their number (a batch verify's hundred accepts of one lease are one increment). Returns
        the names of the event types seen."""
        alike: dict[Any, list[Any]] = {}  # by type and values read: the first event, how many
        for event in events:
            key = _ALIKE[event.name](event)
            seen = alike.get(key)
            if seen is None:
                alike[key] = [event, 1]
            else:
                seen[1] += 1
        for first, times in alike.values():
            self.observe(first, times=times)
        return {first.name for first, _ in alike.values()}

    def monitor_pass(self, role: str, seconds: float) -> None:
        """A monitor pass ended: `leader` (it did the work), `standby` or `error`."""
        self.monitor_passes.labels(role).inc()
        self.monitor_pass_durations.labels(role).observe(seconds)


class TelemetrySink:
    """The service's `EventSink`: one structured log line and the matching counters per event."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def record(self, event: Event) -> None:
        try:
            entry = CATALOGUE[event.name]
            self._metrics.observe(event, entry)
            if _events.isEnabledFor(entry.level):
                _log_event(event, entry.level)
        except Exception:  # telemetry must never fail an operation
            _log.exception("could not record %s", type(event).__name__)

    def record_many(self, events: Sequence[Event]) -> None:
        """Each event's metrics and log line, as `record` gives them; the metrics of events
        alike added to at once, and the log level of each type looked up once (a batch's
        routine successes log at debug: usually no line at all)."""
        try:
            names = self._metrics.observe_many(events)
            levels = {name: CATALOGUE[name].level for name in names}
            logged = {name: level for name, level in levels.items() if _events.isEnabledFor(level)}
            for event in events if logged else ():
                if event.name in logged:
                    _log_event(event, logged[event.name])
        except Exception:  # telemetry must never fail an operation
            _log.exception("could not record %d events", len(events))


def _log_event(event: Event, level: int) -> None:
    _events.log(level, event.name, extra={"event": event.name, **event_fields(event)})


class Telemetry:
    """Everything observability an app owns: counters, the event sink, the database and pool
    gauges."""

    def __init__(self, cache_seconds: float) -> None:
        self.metrics = Metrics()
        self.sink = TelemetrySink(self.metrics)
        self.gauges = DatabaseGauges(cache_seconds)
        # Sampled in the background too when workers share the metrics: a scrape reaches one.
        self._folder = os.environ.get(MULTIPROCESS_ENV)
        self.pool = PoolGauges(self.metrics.registry, shared=bool(self._folder))
        self.database_clock = DatabaseClockMetrics(self.metrics.registry)
        # Under workers, a scrape shows every worker's files (this process's registry writes to
        # them) and the state gauges; the reader of the files keeps what it read between scrapes.
        self._exposition = (
            Exposition([WorkerMetrics(self._folder), self.gauges])
            if self._folder
            else Exposition([self.gauges], collector=self.metrics.registry)
        )

    def exposition(self) -> bytes:
        """The text format of every metric: this process's (or all workers') and the gauges."""
        self.pool.sample()
        if self._folder:
            forget_dead_workers(self._folder)
        return self._exposition.render()

    async def scrape(
        self,
        read_state: Callable[[], Awaitable[tuple[Overview, dict[str, int]]]],
        ready: Callable[[], Awaitable[bool]],
    ) -> bytes:
        """The exposition, with the state gauges read again first when they are stale."""

        async def read() -> list[Gauge | StateSet]:
            return state_gauges(*await read_state())

        await self.gauges.refresh(read, ready)
        return self.exposition()
