"""/v1/leases: acquire, renew, release, read and list leases."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request

from tenure_server.api.dependencies import LimitsDep, OperationsDep
from tenure_server.api.schemas import (
    AcquireRequest,
    LeaseName,
    LeaseOut,
    LeasePage,
    ReleaseRequest,
    RenewRequest,
    problem_responses,
)
from tenure_server.domain.errors import LeaseNotFound
from tenure_server.domain.names import NAME_MAX_LENGTH

router = APIRouter(prefix="/v1/leases", tags=["leases"])


@router.post("/{name}/acquire", responses=problem_responses(409))
async def acquire(
    name: LeaseName,
    body: AcquireRequest,
    request: Request,
    operations: OperationsDep,
    limits: LimitsDep,
) -> LeaseOut:
    """Take the lease if it is free or expired (generation + 1), or extend it if this holder
    still holds it (same generation). With `wait_seconds`, wait for a release or expiry. 409
    `lease-held` with `Retry-After` otherwise."""
    ttl, wait = limits.ttl(body.ttl_seconds), limits.wait(body.wait_seconds)
    if wait == 0:
        return LeaseOut.of(await operations.acquire(name, body.holder, ttl))
    abandoned = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, abandoned))
    try:
        return LeaseOut.of(await operations.acquire(name, body.holder, ttl, wait, abandoned))
    finally:
        watcher.cancel()


async def _watch_disconnect(request: Request, abandoned: asyncio.Event) -> None:
    # The body has been read, so the next ASGI message can only be the client going away.
    while (await request.receive())["type"] != "http.disconnect":
        pass
    abandoned.set()


@router.post("/{name}/renew", responses=problem_responses(409))
async def renew(
    name: LeaseName, body: RenewRequest, operations: OperationsDep, limits: LimitsDep
) -> LeaseOut:
    """Extend the holding named by holder + generation, only before it expires."""
    ttl = limits.ttl(body.ttl_seconds)
    return LeaseOut.of(await operations.renew(name, body.holder, body.generation, ttl))


@router.post("/{name}/release", responses=problem_responses(404, 409))
async def release(name: LeaseName, body: ReleaseRequest, operations: OperationsDep) -> LeaseOut:
    """Expire the holding at once; the row and its generation stay. Releasing again is a no-op."""
    return LeaseOut.of(await operations.release(name, body.holder, body.generation))


@router.get("/{name}", responses=problem_responses(404))
async def get_lease(name: LeaseName, operations: OperationsDep) -> LeaseOut:
    lease = await operations.get_lease(name)
    if lease is None:
        raise LeaseNotFound(name)
    return LeaseOut.of(lease)


@router.get("", responses=problem_responses())
async def list_leases(
    operations: OperationsDep,
    limits: LimitsDep,
    prefix: Annotated[str, Query(max_length=NAME_MAX_LENGTH, pattern=r"^[A-Za-z0-9._:-]*$")] = "",
    limit: Annotated[int | None, Query(description="Page size.")] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> LeasePage:
    """Leases in name order, optionally under a name prefix; follow `next_cursor` for more."""
    items, next_cursor = await operations.list_leases(prefix, limits.page_size(limit), cursor)
    return LeasePage(items=[LeaseOut.of(lease) for lease in items], next_cursor=next_cursor)
