"""/v1/jobs: register, read, list and delete job definitions, with their computed status, and
each job's history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from tenure_server.api.dependencies import CallerDep, JobsDep, LimitsDep
from tenure_server.api.schemas import JobName, json_response, problem_responses
from tenure_server.api.status_schemas import (
    JobEventOut,
    JobEventPage,
    JobOut,
    JobPage,
    JobPut,
    job_fields,
    unregistered_fields,
)
from tenure_server.domain.errors import Forbidden
from tenure_server.domain.history import event_cursor
from tenure_server.domain.names import (
    NAME_MAX_LENGTH,
    decode_cursor,
    encode_cursor,
    prefix_upper_bound,
)

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

Cursor = Annotated[str | None, Query(max_length=400)]
PageSize = Annotated[int | None, Query(description="Page size.")]


@router.put("/{job}", responses=problem_responses(403))
async def put_job(job: JobName, body: JobPut, caller: CallerDep, jobs: JobsDep) -> JobOut:
    """Register the job, or update its definition (idempotent: an identical PUT changes nothing).
    A new schedule takes effect now: earlier occurrences are never reported missed."""
    spec = body.spec(job)
    caller.require_client("register jobs", job, spec.lease)
    return JobOut.of(await jobs.put(job, spec))


@router.get("/{job}", responses=problem_responses(403, 404))
async def get_job(job: JobName, caller: CallerDep, jobs: JobsDep) -> JobOut:
    """The job's definition and its status now, by the database clock."""
    caller.require("reader", "read", job)
    return JobOut.of(await jobs.get(job))


@router.delete("/{job}", status_code=204, responses=problem_responses(403, 404))
async def delete_job(job: JobName, caller: CallerDep, jobs: JobsDep) -> Response:
    """Stop monitoring the job; its open alerts are resolved. Its windows and history stay."""
    # Not require_client: a job registered under a reserved name before it was reserved can
    # still be deleted (nothing runs under a lease by deleting).
    caller.require("client", "delete jobs", job)
    await jobs.delete(job)
    return Response(status_code=204)


# The answer encoded from the jobs' fields, not from a model per job (see overview_json).
@router.get("", response_model=JobPage, responses=problem_responses(403))
async def list_jobs(
    caller: CallerDep,
    jobs: JobsDep,
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
) -> Response:
    """Jobs in name order with their status, optionally under a name prefix."""
    caller.require("reader", "list jobs")
    if not caller.owns(prefix):
        raise Forbidden(caller.label, "list jobs", prefix or "(every name)")
    size = limits.page_size(limit)
    after = decode_cursor(cursor) or ""
    upper = prefix_upper_bound(prefix)
    evaluated, found, more = await jobs.page(after, prefix, upper, size, unregistered=unregistered)
    items = [job_fields(item) for item in evaluated]
    items += [unregistered_fields(item) for item in found]
    # Both sides are in name order after the cursor: their first `size` names, merged, are the
    # page, and a name beyond it on either side means another page.
    items.sort(key=lambda item: str(item["name"]))
    more = more or len(items) > size
    page = items[:size]
    return json_response(
        {"items": page, "next_cursor": encode_cursor(page[-1]["name"]) if more else None}
    )


@router.get("/{job}/events", responses=problem_responses(403))
async def job_events(
    job: JobName,
    caller: CallerDep,
    jobs: JobsDep,
    limits: LimitsDep,
    limit: PageSize = None,
    cursor: Cursor = None,
) -> JobEventPage:
    """The job's history, newest first: registrations, claims, completions, alerts. A job that
    never ran nor was registered has none."""
    caller.require("reader", "read", job)
    size = limits.page_size(limit)
    before = event_cursor(cursor)
    found = await jobs.events(job, before, size + 1)
    return JobEventPage(
        items=[JobEventOut.of(record) for record in found[:size]],
        next_cursor=encode_cursor(str(found[size - 1].id)) if len(found) > size else None,
    )
