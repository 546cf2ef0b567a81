"""Runs the statements of `sql/jobs.sql`: job definitions, the facts a job's status is computed
from, and the job history. One method per statement, named after it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from tenure.schedule import KeyFormat
from tenure_server.db.connections import Connections, Record
from tenure_server.db.sql import load
from tenure_server.db.windows import window_of
from tenure_server.domain.history import JobRecord
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.status import JobFacts, WindowFacts
from tenure_server.domain.windows import Window

QUERIES = load("jobs.sql")
# Rows of list_jobs whose jobs are remembered; beyond, all are forgotten at once.
KNOWN_JOB_ROWS = 10_000


class Jobs(Connections):
    async def put_job(self, name: str, spec: JobSpec) -> Job | None:
        """The job as written, or None when the PUT changed nothing."""
        row = await self._fetchrow(
            QUERIES["put_job"],
            name,
            spec.schedule,
            spec.timezone,
            spec.key,
            spec.lease,
            spec.deadline_seconds,
            spec.max_runtime_seconds,
            json.dumps(dict(spec.labels), sort_keys=True),
        )
        return None if row is None else _job(row)

    async def get_job(self, name: str) -> Job | None:
        row = await self._fetchrow(QUERIES["get_job"], name)
        return None if row is None else _job(row)

    async def delete_job(self, name: str) -> bool:
        return await self._fetchrow(QUERIES["delete_job"], name) is not None

    async def list_jobs(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Job]:
        rows = await self._fetch(QUERIES["list_jobs"], after, prefix, prefix_end, limit)
        return [_LISTED.job(row) for row in rows]

    async def jobs_named(self, names: Sequence[str]) -> list[Job]:
        """Those of `names` that are live jobs, in name order."""
        return [_job(row) for row in await self._fetch(QUERIES["jobs_named"], list(names))]

    async def unregistered_jobs(
        self, after: str, prefix: str, end: str | None, limit: int
    ) -> list[str]:
        """Names of jobs with windows but no live registration, in name order (as list_jobs),
        before `end` (exclusive: the prefix's upper bound, or nearer)."""
        rows = await self._fetch(QUERIES["unregistered_jobs"], after, prefix, end, limit)
        return [row["job"] for row in rows]

    async def window_facts(
        self, jobs: Sequence[str], named: Sequence[tuple[str, str]]
    ) -> dict[str, JobFacts]:
        """Per job: its latest completed and started windows, and the (job, key) windows named."""
        rows = await self._fetch(
            QUERIES["window_facts"],
            list(jobs),
            [job for job, _ in named],
            [key for _, key in named],
        )
        windows: dict[str, dict[str, WindowFacts]] = {job: {} for job in jobs}
        completed: dict[str, Window] = {}
        started: dict[str, WindowFacts] = {}
        for row in rows:
            facts = WindowFacts(window_of(row), bool(row["lease_held"]))
            job = row["job"]
            if row["last_completed"]:
                completed[job] = facts.window
            if row["last_started"]:
                started[job] = facts
            if row["named"]:
                windows.setdefault(job, {})[row["window_key"]] = facts
        return {
            job: JobFacts(windows.get(job, {}), completed.get(job), started.get(job))
            for job in set(jobs) | set(windows)
        }

    async def job_events(self, job: str, before: int | None, limit: int) -> list[JobRecord]:
        rows = await self._fetch(QUERIES["job_events"], job, before, limit)
        return [
            JobRecord(
                id=row["id"],
                job=row["job"],
                kind=row["kind"],
                window=row["window_key"],
                lease=row["lease"],
                holder=row["holder"],
                generation=row["generation"],
                attempt=row["attempt"],
                detail=row["detail"],
                at=row["at"],
            )
            for row in rows
        ]


class _JobRows:
    """Jobs decoded from list_jobs' rows, remembered by the row's values: every write to a job
    changes its row (updated_at moves), so a row seen before is that job as decoded then. The
    overview, /metrics and each monitor pass list every job again, and decoding one (its labels'
    JSON, two frozen dataclasses) cost more than fetching it; a lookup costs a tenth of that.
    One statement's rows only: the key is the values in its column order."""

    def __init__(self) -> None:
        self._known: dict[tuple[object, ...], Job] = {}

    def job(self, row: Record) -> Job:
        key = tuple(row)
        found = self._known.get(key)
        if found is None:
            if len(self._known) >= KNOWN_JOB_ROWS:
                self._known.clear()
            found = self._known[key] = _job(row)
        return found


# Shared by every repository of the process, as a decoded row is the same job whatever asked.
_LISTED = _JobRows()


def _job(row: Record) -> Job:
    spec = JobSpec(
        schedule=row["schedule"],
        timezone=row["timezone"],
        key=cast(KeyFormat, row["key_format"]),
        lease=row["lease"],
        deadline_seconds=row["deadline_seconds"],
        max_runtime_seconds=row["max_runtime_seconds"],
        labels=json.loads(row["labels"]),
    )
    return Job(
        name=row["name"],
        spec=spec,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        active_since=row["active_since"],
    )
