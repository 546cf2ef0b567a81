"""/v1/jobs/{job}/windows: claim and complete one occurrence of a job; read and list windows."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response
from starlette.types import Receive

from tenure import schedule
from tenure.schedule import check_cron, check_timezone
from tenure_server.api.dependencies import (
    CallerDep,
    Context,
    HealthDep,
    LimitsDep,
    OperationsDep,
)
from tenure_server.api.paths import WindowPath
from tenure_server.api.schemas import (
    JobName,
    Resolution,
    ResolveRequest,
    WindowKey,
    WindowOut,
    WindowPage,
    WindowRequest,
    as_json,
    problem_responses,
)
from tenure_server.domain.errors import InvalidInput, WindowNotFound
from tenure_server.domain.principals import Principal
from tenure_server.domain.windows import Holding

router = APIRouter(prefix="/v1/jobs/{job}/windows", tags=["windows"])
resolver = APIRouter(prefix="/v1/windows", tags=["windows"])


def _holding(caller: Principal, action: str, job: str, body: WindowRequest) -> Holding:
    caller.require_client(action, job, body.lease)
    return Holding(body.lease, body.holder, body.generation, caller.name)


# The hot routes' actions, as in leases.py: no second validation of the answer, and the routes
# and express lanes made from them in api/hot_routes.py.
async def claim(context: Context, path: WindowPath, body: WindowRequest, _: Receive) -> Response:
    """Start (or resume, attempt + 1) this occurrence under a held lease. A completed window is
    never claimable again: 409 `window-completed` tells a late or repeated run to skip."""
    holding = _holding(context.caller, "claim windows", path.job, body)
    return as_json(WindowOut.of(await context.operations.claim(path.job, path.window, holding)))


async def complete(context: Context, path: WindowPath, body: WindowRequest, _: Receive) -> Response:
    """Mark the occurrence done. Repeating it with the same holding returns the original."""
    holding = _holding(context.caller, "complete windows", path.job, body)
    window = await context.operations.complete(path.job, path.window, holding)
    return as_json(WindowOut.of(window))


@router.get("/{window}", responses=problem_responses(401, 403, 404))
async def get_window(
    job: JobName, window: WindowKey, caller: CallerDep, operations: OperationsDep
) -> WindowOut:
    caller.require("reader", "read windows", job)
    found = await operations.get_window(job, window)
    if found is None:
        raise WindowNotFound(job, window)
    return WindowOut.of(found)


@router.get("", responses=problem_responses(401, 403))
async def list_windows(
    job: JobName,
    caller: CallerDep,
    operations: OperationsDep,
    limits: LimitsDep,
    limit: Annotated[int | None, Query(description="Page size.")] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> WindowPage:
    """The job's windows, newest key first; follow `next_cursor` for more."""
    caller.require("reader", "list windows", job)
    items, next_cursor = await operations.list_windows(job, limits.page_size(limit), cursor)
    return WindowPage(items=[WindowOut.of(window) for window in items], next_cursor=next_cursor)


@resolver.post("/resolve", responses=problem_responses(401, 403))
async def resolve(
    body: ResolveRequest, caller: CallerDep, health: HealthDep, limits: LimitsDep
) -> Resolution:
    """The occurrence a schedule meant to run at (or before) `at`, by default now by the
    database clock, and its window key: the same arithmetic as the Python SDK, for clients in
    any language. An occurrence at most `early_tolerance_seconds` after that instant counts."""
    caller.require("reader", "resolve windows")
    try:
        check_cron(body.cron)
    except ValueError as error:
        raise InvalidInput("cron", str(error)) from None
    try:
        check_timezone(body.timezone)
    except ValueError as error:
        raise InvalidInput("timezone", str(error)) from None
    tolerance = limits.early_tolerance(body.early_tolerance_seconds)
    now = await health.database_now()
    at = body.at or now
    try:
        # In UTC: adding to a local wall clock would be off by an hour across a DST change.
        meant = at.astimezone(UTC) + timedelta(seconds=tolerance)
        resolved = schedule.resolve(body.cron, body.timezone, meant, body.key)
        following = schedule.next_occurrence(body.cron, body.timezone, meant)
    # Near the limits of datetime (years 1 and 9999), or a schedule that never fires around
    # `at`; the SDK lets OverflowError escape for the day before 0001-01-01.
    except (ValueError, OverflowError) as error:
        raise InvalidInput("at", f"no occurrence at {at.isoformat()}: {error}") from None
    return Resolution(
        occurrence=resolved.occurrence, window=resolved.window, next_occurrence=following, now=now
    )
