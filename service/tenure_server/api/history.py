"""A lease's history, and the operator's overview (what `GET /ui` and `tenure status` show)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from tenure_server.api.dependencies import CallerDep, HistoryDep, LimitsDep
from tenure_server.api.schemas import LeaseName, problem_responses
from tenure_server.api.status_schemas import (
    LeaseEventOut,
    LeaseEventPage,
    OverviewOut,
    overview_json,
)
from tenure_server.app.status import Overview
from tenure_server.domain.history import event_cursor
from tenure_server.domain.names import encode_cursor
from tenure_server.domain.principals import Principal

router = APIRouter(tags=["history"])


@router.get("/v1/leases/{name}/events", responses=problem_responses(403))
async def lease_events(
    name: LeaseName,
    caller: CallerDep,
    history: HistoryDep,
    limits: LimitsDep,
    limit: Annotated[int | None, Query(description="Page size.")] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> LeaseEventPage:
    """The lease's transitions, newest first: acquired, taken over (with the previous holder and
    generation), released, renew refused. Successful renewals are not recorded."""
    caller.require("reader", "read", name)
    size = limits.page_size(limit)
    found = await history.lease_events(name, event_cursor(cursor), size + 1)
    return LeaseEventPage(
        items=[LeaseEventOut.of(record) for record in found[:size]],
        next_cursor=encode_cursor(str(found[size - 1].id)) if len(found) > size else None,
    )


# The answer encoded from the jobs' fields, not from a model per job (see overview_json).
@router.get("/v1/overview", response_model=OverviewOut, responses=problem_responses(403))
async def overview(caller: CallerDep, history: HistoryDep) -> Response:
    """Jobs with their status, leases (held first) with their age, open alerts, and notable
    events (takeovers, lost leases, fence rejections, alerts), limited to the caller's names."""
    caller.require("reader", "read the overview")
    return overview_json(visible(await history.overview(), caller))


def visible(overview: Overview, caller: Principal) -> Overview:
    """The overview restricted to the names in the caller's namespaces."""
    return Overview(
        now=overview.now,
        jobs=[item for item in overview.jobs if caller.owns(item.job.name)],
        leases=[age for age in overview.leases if caller.owns(age.lease.name)],
        alerts=[item for item in overview.alerts if caller.owns(item.alert.subject)],
        events=[
            event
            for event in overview.events
            if caller.owns(event.subject) and (event.lease is None or caller.owns(event.lease))
        ],
        unregistered=[item for item in overview.unregistered if caller.owns(item.name)],
    )
