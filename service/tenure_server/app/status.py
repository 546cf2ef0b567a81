"""Job statuses and the operator's overview, computed by the pure rules of `domain.status` from
one read of the facts, at the database clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from tenure_server.app.ports import HealthStore, HistoryStore, JobStore
from tenure_server.domain.alerts import OpenAlert
from tenure_server.domain.history import NotableEvent
from tenure_server.domain.jobs import Job
from tenure_server.domain.status import (
    Expectation,
    JobFacts,
    JobStatus,
    LeaseAge,
    Span,
    SpecKey,
    expect_span,
    interrupted_window,
    job_status,
    lease_age,
    spec_key,
)

T = TypeVar("T")

# Pages read when every job is needed (monitor, overview, metrics): bounded, not unbounded.
JOB_PAGE = 500
# The facts of a job that has no window; shared (nothing changes a JobFacts).
NO_FACTS = JobFacts()
# Distinct schedules whose expectations are remembered, per job the overview reads; beyond, all
# are forgotten at once.
KNOWN_SPECS_PER_JOB = 4


@dataclass(frozen=True, slots=True)
class OverviewLimits:
    """How much an overview reads (GET /v1/overview, /ui, and the /metrics state gauges, which
    read `gauged_leases` leases and no alerts or events): each a bound, so that one costs the
    same however much lies beyond it. TENURE_OVERVIEW_* (server/settings.py)."""

    jobs: int = 5000  # live jobs evaluated, in name order
    open_alerts: int = 1000  # the oldest open alerts
    unregistered: int = 500  # beyond, register them or read GET /v1/jobs
    leases: int = 100  # held leases, longest held first
    events: int = 30  # the latest notable events
    gauged_leases: int = 1000  # the leases /metrics' state gauges are read from


@dataclass(frozen=True, slots=True)
class Evaluated:
    """A job with where its schedule stands, the facts read, and the status they give."""

    job: Job
    expectation: Expectation
    facts: JobFacts
    status: JobStatus


@dataclass(frozen=True, slots=True)
class Unregistered:
    """A job that claimed windows but is not registered: no schedule, so no status; only its
    latest windows."""

    name: str
    facts: JobFacts

    @property
    def interrupted_window(self) -> str | None:
        return interrupted_window(self.facts)


@dataclass(frozen=True, slots=True)
class Overview:
    now: datetime
    jobs: list[Evaluated]
    leases: list[LeaseAge]
    alerts: list[OpenAlert]
    events: list[NotableEvent]
    unregistered: list[Unregistered] = field(default_factory=list)


class Expectations:
    """Each job's expectation, its cron arithmetic done once per distinct schedule (`spec_key`)
    and reused while it holds (`Span`): the overviews, pages and monitor passes until the next
    occurrence (or the next deadline passed) pay a lookup per job, not the arithmetic, however
    many schedules the jobs have. The spans are pure answers of `expect_span`: remembering one
    changes no status."""

    def __init__(self, known_specs: int) -> None:
        self._known: dict[SpecKey, Span] = {}
        self._known_specs = known_specs

    def each(self, jobs: Sequence[Job], now: datetime) -> dict[str, Expectation]:
        found: dict[str, Expectation] = {}
        for job in jobs:
            key = spec_key(job.spec)
            span = self._known.get(key)
            if span is None or not span.holds_at(now):
                if len(self._known) >= self._known_specs:
                    self._known.clear()
                span = self._known[key] = expect_span(job.spec, now)
            found[job.name] = span.expectation
        return found


class StatusReader:
    def __init__(
        self,
        repository: HealthStore,
        jobs: JobStore,
        monitoring: HistoryStore,
        limits: OverviewLimits = OverviewLimits(),
    ) -> None:
        self._repository = repository
        self._jobs = jobs
        self._monitoring = monitoring
        self.limits = limits
        self._expectations = Expectations(KNOWN_SPECS_PER_JOB * limits.jobs)

    async def now(self) -> datetime:
        return await self._repository.database_now()

    async def jobs_after(self, after: str, limit: int) -> list[Job]:
        """Up to `limit` live jobs in name order after `after` ('': from the first), read
        JOB_PAGE at a time."""
        return [job async for page in self._pages(after, limit) for job in page]

    async def _pages(self, after: str, limit: int) -> AsyncIterator[list[Job]]:
        """Up to `limit` live jobs in name order after `after`, JOB_PAGE at a time."""
        while limit > 0:
            wanted = min(JOB_PAGE, limit)
            page = await self._jobs.list_jobs(after, "", None, wanted)
            if page:
                yield page
            if len(page) < wanted:
                return
            after, limit = page[-1].name, limit - len(page)

    async def jobs_named(self, names: Sequence[str]) -> list[Job]:
        """Those of `names` that are live jobs, in name order."""
        return await self._jobs.jobs_named(names)

    async def unregistered(
        self, after: str, prefix: str, end: str | None, limit: int
    ) -> list[Unregistered]:
        """Up to `limit` jobs that ran unregistered, in name order after `after`, under `prefix`,
        before `end` (exclusive; None: no bound but the prefix)."""
        names = await self._jobs.unregistered_jobs(after, prefix, end, limit)
        facts = await self._jobs.window_facts(names, []) if names else {}
        return [Unregistered(name, facts.get(name, NO_FACTS)) for name in names]

    async def evaluate(
        self,
        jobs: Sequence[Job],
        now: datetime,
        extra: Sequence[tuple[str, str]] = (),
        *,
        overdue: bool = False,
    ) -> list[Evaluated]:
        """Each job's status at `now`. `extra` names more (job, window) pairs to read, whose facts
        come back in the job's `facts.windows` (the monitor's open alerts); `overdue` reads each
        job's overdue window there too, which only a missed alert is about (the monitor): a
        status needs the current window alone, and an overdue one that exists is history, a
        lookup that only a grown database pays."""
        if not jobs and not extra:
            return []
        expectations = self._expectations.each(jobs, now)
        named = {(name, expected.window) for name, expected in expectations.items()}
        if overdue:
            named |= {(name, expected.overdue_window) for name, expected in expectations.items()}
        facts = await self._jobs.window_facts(list(expectations), [*named, *extra])
        return [
            _evaluated(job, expectations[job.name], facts.get(job.name, NO_FACTS), now)
            for job in jobs
        ]

    async def lease_ages(self, stuck_after: float, limit: int) -> list[LeaseAge]:
        now = await self.now()
        return [
            lease_age(lease, now, stuck_after, max_runtime)
            for lease, max_runtime in await self._monitoring.monitored_leases(limit)
        ]

    async def overview(
        self,
        *,
        stuck_after: float,
        lease_limit: int | None = None,
        event_limit: int | None = None,
        alert_limit: int | None = None,
    ) -> Overview:
        """Jobs, held leases, open alerts and notable events, each read up to its limit (None:
        `limits`'); a limit of 0 reads none (the /metrics gauges need neither alerts nor
        events). The five reads do not depend on one another: they run at once, each on a
        pooled connection of its own, so that the overview waits for the slowest, not for their
        sum."""
        limits = self.limits
        lease_limit = limits.leases if lease_limit is None else lease_limit
        event_limit = limits.events if event_limit is None else event_limit
        alert_limit = limits.open_alerts if alert_limit is None else alert_limit
        now = await self.now()
        jobs, leases, alerts, events, unregistered = await asyncio.gather(
            self._evaluate_all(now),
            self.lease_ages(stuck_after, lease_limit),
            self._monitoring.open_alerts(alert_limit) if alert_limit else no_rows(OpenAlert),
            self._monitoring.recent_events(event_limit) if event_limit else no_rows(NotableEvent),
            self.unregistered("", "", None, limits.unregistered),
        )
        return Overview(now, jobs, leases, alerts, events, unregistered)

    async def _evaluate_all(self, now: datetime) -> list[Evaluated]:
        """Every live job (at most `limits.jobs`), evaluated a page at a time: a page's windows
        are read while the next page of jobs is, each on a pooled connection of its own."""
        evaluating: list[asyncio.Task[list[Evaluated]]] = []
        try:
            async for page in self._pages("", self.limits.jobs):
                evaluating.append(asyncio.create_task(self.evaluate(page, now)))
            pages = await asyncio.gather(*evaluating)
        finally:
            for left in evaluating:  # a read failed: the other pages are not wanted
                left.cancel()
        return [item for page in pages for item in page]


def _evaluated(job: Job, expectation: Expectation, facts: JobFacts, now: datetime) -> Evaluated:
    return Evaluated(job, expectation, facts, job_status(job, expectation, facts, now))


async def no_rows(kind: type[T]) -> list[T]:
    """No rows of `kind`: a read not asked for."""
    return []
