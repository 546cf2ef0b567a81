"""/v1/jobs: register, read, list and delete job definitions, with their computed status, and
each job's history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from tenure_server.api.dependencies import CallerDep, LimitsDep, MonitoringDep
from tenure_server.api.schemas import JobName, problem_responses
from tenure_server.api.status_schemas import (
    JobEventOut,
    JobEventPage,
    JobOut,
    JobPage,
    JobPut,
    UnregisteredJobOut,
)
from tenure_server.domain.errors import Forbidden, JobNotFound
from tenure_server.domain.history import event_cursor
from tenure_server.domain.jobs import Job, check_spec
from tenure_server.domain.names import (
    NAME_MAX_LENGTH,
    decode_cursor,
    encode_cursor,
    prefix_upper_bound,
)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

Cursor = Annotated[str | None, Query(max_length=400)]
PageSize = Annotated[int | None, Query(description="Page size.")]


async def _out(monitoring: MonitoringDep, job: Job) -> JobOut:
    statuses = monitoring.statuses
    (item,) = await statuses.evaluate([job], await statuses.now())
    return JobOut.of(item)


@router.put("/{job}", responses=problem_responses(403))
async def put_job(
    job: JobName, body: JobPut, caller: CallerDep, monitoring: MonitoringDep
) -> JobOut:
    """Register the job, or update its definition (idempotent: an identical PUT changes nothing).
    A new schedule takes effect now: earlier occurrences are never reported missed."""
    spec = body.spec(job)
    caller.require_client("register jobs", job, spec.lease)
    check_spec(spec, await monitoring.statuses.now())
    written = await monitoring.jobs.put_job(job, spec)
    found = written or await monitoring.jobs.get_job(job)
    if found is None:  # deleted between the PUT and the read: say so rather than invent it
        raise JobNotFound(job)
    return await _out(monitoring, found)


@router.get("/{job}", responses=problem_responses(403, 404))
async def get_job(job: JobName, caller: CallerDep, monitoring: MonitoringDep) -> JobOut:
    """The job's definition and its status now, by the database clock."""
    caller.require("reader", "read", job)
    found = await monitoring.jobs.get_job(job)
    if found is None:
        raise JobNotFound(job)
    return await _out(monitoring, found)


@router.delete("/{job}", status_code=204, responses=problem_responses(403, 404))
async def delete_job(job: JobName, caller: CallerDep, monitoring: MonitoringDep) -> Response:
    """Stop monitoring the job; its open alerts are resolved. Its windows and history stay."""
    # Not require_client: a job registered under a reserved name before it was reserved can
    # still be deleted (nothing runs under a lease by deleting).
    caller.require("client", "delete jobs", job)
    if not await monitoring.jobs.delete_job(job):
        raise JobNotFound(job)
    return Response(status_code=204)


@router.get("", responses=problem_responses(403))
async def list_jobs(
    caller: CallerDep,
    monitoring: MonitoringDep,
    limits: LimitsDep,
    prefix: Annotated[str, Query(max_length=NAME_MAX_LENGTH, pattern=r"^[A-Za-z0-9._:-]*$")] = "",
    limit: PageSize = None,
    cursor: Cursor = None,
    unregistered: Annotated[
        bool,
        Query(
            description="Also list jobs that claimed windows but are not registered "
            "(`registered: false`, no schedule nor status). `false` for SDKs older than the "
            "field, whose `list_jobs` requires a schedule in every entry."
        ),
    ] = True,
) -> JobPage:
    """Jobs in name order with their status, optionally under a name prefix."""
    caller.require("reader", "list jobs")
    if not caller.owns(prefix):
        raise Forbidden(caller.label, "list jobs", prefix or "(every name)")
    size = limits.page_size(limit)
    after = decode_cursor(cursor) or ""
    upper = prefix_upper_bound(prefix)
    statuses = monitoring.statuses
    rows = await monitoring.jobs.list_jobs(after, prefix, upper, size + 1)
    items: list[JobOut | UnregisteredJobOut] = [
        JobOut.of(item) for item in await statuses.evaluate(rows[:size], await statuses.now())
    ]
    if unregistered:
        # A full page of registered jobs ends the page at its last name: the walk for
        # unregistered ones stops there instead of stepping over every job beyond it, so a page
        # reads about `size` jobs however many there are (`more` is known already).
        end = rows[size - 1].name if len(rows) > size else upper
        found = await statuses.unregistered(after, prefix, end, size + 1)
        items += [UnregisteredJobOut.of(item) for item in found]
    # Both sides are in name order after the cursor: their first `size` names, merged, are the
    # page, and a name beyond it on either side means another page.
    items.sort(key=lambda item: item.name)
    more = len(rows) > size or len(items) > size
    page = items[:size]
    return JobPage(items=page, next_cursor=encode_cursor(page[-1].name) if more else None)


@router.get("/{job}/events", responses=problem_responses(403))
async def job_events(
    job: JobName,
    caller: CallerDep,
    monitoring: MonitoringDep,
    limits: LimitsDep,
    limit: PageSize = None,
    cursor: Cursor = None,
) -> JobEventPage:
    """The job's history, newest first: registrations, claims, completions, alerts. A job that
    never ran nor was registered has none."""
    caller.require("reader", "read", job)
    size = limits.page_size(limit)
    before = event_cursor(cursor)
    found = await monitoring.jobs.job_events(job, before, size + 1)
    return JobEventPage(
        items=[JobEventOut.of(record) for record in found[:size]],
        next_cursor=encode_cursor(str(found[size - 1].id)) if len(found) > size else None,
    )
