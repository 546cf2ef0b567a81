"""Job definitions with their status, and each job's history: what /v1/jobs serves."""

from __future__ import annotations

import asyncio

from tenure_server.app.ports import JobStore
from tenure_server.app.status import Evaluated, StatusReader, Unregistered, no_rows
from tenure_server.domain.errors import JobNotFound
from tenure_server.domain.history import JobRecord
from tenure_server.domain.jobs import Job, JobSpec, check_spec


class Jobs:
    def __init__(self, store: JobStore, statuses: StatusReader) -> None:
        self._store = store
        self._statuses = statuses

    async def put(self, name: str, spec: JobSpec) -> Evaluated:
        """Register the job or update its definition (an identical one changes nothing)."""
        check_spec(spec, await self._statuses.now())
        found = await self._store.put_job(name, spec) or await self._store.get_job(name)
        if found is None:  # deleted between the PUT and the read: say so rather than invent it
            raise JobNotFound(name)
        return await self._evaluated(found)

    async def get(self, name: str) -> Evaluated:
        """The job and its status now, by the database clock; JobNotFound without one."""
        found = await self._store.get_job(name)
        if found is None:
            raise JobNotFound(name)
        return await self._evaluated(found)

    async def delete(self, name: str) -> None:
        """Stop monitoring the job; JobNotFound when there was none."""
        if not await self._store.delete_job(name):
            raise JobNotFound(name)

    async def page(
        self, after: str, prefix: str, prefix_end: str | None, size: int, *, unregistered: bool
    ) -> tuple[list[Evaluated], list[Unregistered], bool]:
        """Up to `size` jobs in name order after `after`, evaluated; with `unregistered`, up to
        `size + 1` jobs that ran unregistered in the same range; and whether more registered
        jobs follow. The reads that do not depend on one another run at once, each on a pooled
        connection of its own, so that a page waits for two reads, not five in a row: the jobs
        and the database clock, then the windows of the jobs and the walk for unregistered ones.
        A full page of registered jobs ends the walk at its last name, instead of stepping over
        every job beyond it, so a page reads about `size` jobs however many there are."""
        rows, now = await asyncio.gather(
            self._store.list_jobs(after, prefix, prefix_end, size + 1), self._statuses.now()
        )
        listed, more = rows[:size], len(rows) > size
        end = listed[-1].name if more else prefix_end
        evaluated, found = await asyncio.gather(
            self._statuses.evaluate(listed, now),
            self._statuses.unregistered(after, prefix, end, size + 1)
            if unregistered
            else no_rows(Unregistered),
        )
        return evaluated, found, more

    async def events(self, name: str, before: int | None, limit: int) -> list[JobRecord]:
        return await self._store.job_events(name, before, limit)

    async def _evaluated(self, job: Job) -> Evaluated:
        (item,) = await self._statuses.evaluate([job], await self._statuses.now())
        return item
