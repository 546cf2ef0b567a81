"""/v1/jobs/{job}/windows: claim and complete one occurrence of a job; read and list windows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from tenure import _schedule as schedule
from tenure._schedule import check_cron, check_timezone
from tenure_server.api.dependencies import LimitsDep, OperationsDep, RepositoryDep
from tenure_server.api.schemas import (
    JobName,
    Resolution,
    ResolveRequest,
    WindowKey,
    WindowOut,
    WindowPage,
    WindowRequest,
    problem_responses,
)
from tenure_server.domain.errors import InvalidInput, WindowNotFound
from tenure_server.domain.windows import Holding

router = APIRouter(prefix="/v1/jobs/{job}/windows", tags=["windows"])
resolver = APIRouter(prefix="/v1/windows", tags=["windows"])


def _holding(body: WindowRequest) -> Holding:
    return Holding(lease=body.lease, holder=body.holder, generation=body.generation)


@router.post("/{window}/claim", responses=problem_responses(409))
async def claim(
    job: JobName, window: WindowKey, body: WindowRequest, operations: OperationsDep
) -> WindowOut:
    """Start (or resume, attempt + 1) this occurrence under a held lease. A completed window is
    never claimable again: 409 `window-completed` tells a late or repeated run to skip."""
    return WindowOut.of(await operations.claim(job, window, _holding(body)))


@router.post("/{window}/complete", responses=problem_responses(409))
async def complete(
    job: JobName, window: WindowKey, body: WindowRequest, operations: OperationsDep
) -> WindowOut:
    """Mark the occurrence done. Repeating it with the same holding returns the original."""
    return WindowOut.of(await operations.complete(job, window, _holding(body)))


@router.get("/{window}", responses=problem_responses(404))
async def get_window(job: JobName, window: WindowKey, operations: OperationsDep) -> WindowOut:
    found = await operations.get_window(job, window)
    if found is None:
        raise WindowNotFound(job, window)
    return WindowOut.of(found)


@router.get("", responses=problem_responses())
async def list_windows(
    job: JobName,
    operations: OperationsDep,
    limits: LimitsDep,
    limit: Annotated[int | None, Query(description="Page size.")] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> WindowPage:
    """The job's windows, newest key first; follow `next_cursor` for more."""
    items, next_cursor = await operations.list_windows(job, limits.page_size(limit), cursor)
    return WindowPage(items=[WindowOut.of(window) for window in items], next_cursor=next_cursor)


@resolver.post("/resolve", responses=problem_responses())
async def resolve(body: ResolveRequest, repository: RepositoryDep) -> Resolution:
    """The occurrence a schedule meant to run at (or before) `at`, and its window key: the same
    arithmetic as the Python SDK, for clients in any language."""
    try:
        check_cron(body.cron)
    except ValueError as error:
        raise InvalidInput("cron", str(error)) from None
    try:
        check_timezone(body.timezone)
    except ValueError as error:
        raise InvalidInput("timezone", str(error)) from None
    at = body.at or await repository.database_now()
    resolved = schedule.resolve(body.cron, body.timezone, at, body.key)
    following = schedule.next_occurrence(body.cron, body.timezone, at)
    return Resolution(
        occurrence=resolved.occurrence, window=resolved.window, next_occurrence=following
    )
