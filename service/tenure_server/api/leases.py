"""/v1/leases: acquire, renew, release, read and list leases; force-release for operators."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response
from starlette.types import Receive

from tenure_server.api.batch_bodies import RenewManyBody
from tenure_server.api.dependencies import CallerDep, Context, LimitsDep, OperationsDep
from tenure_server.api.paths import LeasePath, NoPath
from tenure_server.api.schemas import (
    AcquireRequest,
    LeaseName,
    LeaseOut,
    LeasePage,
    ReleaseRequest,
    RenewRequest,
    lease_json,
    problem_responses,
    renewals_json,
)
from tenure_server.domain.errors import Forbidden, LeaseNotFound
from tenure_server.domain.names import NAME_MAX_LENGTH

router = APIRouter(prefix="/v1/leases", tags=["leases"])


# The hot routes' actions (acquire, renew, batch renew, release): api/hot_routes.py makes each a
# FastAPI route and an express lane. They answer with `lease_json`/`renewals_json`: the JSON and
# OpenAPI of the routes' `response_model`, with less per-request work.
async def acquire(
    context: Context, path: LeasePath, body: AcquireRequest, receive: Receive
) -> Response:
    """Take the lease if it is free or expired (generation + 1), or extend it if this holder
    still holds it (same generation). With `wait_seconds`, wait for a release or expiry. 409
    `lease-held` with `Retry-After` otherwise. The holding is bound to the caller's principal.
    409 `generation-exhausted` when no generation is left to begin a holding with (generations
    stop at 9007199254740991)."""
    caller, operations, limits, name = context.caller, context.operations, context.limits, path.name
    caller.require_client("acquire", name)
    ttl, wait = limits.ttl(body.ttl_seconds), limits.wait(body.wait_seconds)
    if wait == 0:
        lease = await operations.acquire(name, body.holder, ttl, principal=caller.name)
        return lease_json(lease)
    abandoned = asyncio.Event()
    watcher = asyncio.create_task(_watch_disconnect(receive, abandoned))
    try:
        lease = await operations.acquire(
            name, body.holder, ttl, principal=caller.name, wait=wait, abandoned=abandoned
        )
    finally:
        watcher.cancel()
    return lease_json(lease)


async def _watch_disconnect(receive: Receive, abandoned: asyncio.Event) -> None:
    # The body has been read, so the next ASGI message can only be the client going away.
    while (await receive())["type"] != "http.disconnect":
        pass
    abandoned.set()


async def renew(context: Context, path: LeasePath, body: RenewRequest, _: Receive) -> Response:
    """Extend the holding named by holder + generation, only before it expires."""
    caller = context.caller
    caller.require_client("renew", path.name)
    ttl = context.limits.ttl(body.ttl_seconds)
    lease = await context.operations.renew(
        path.name, body.holder, body.generation, ttl, caller.name
    )
    return lease_json(lease)


async def renew_many(context: Context, _: NoPath, body: RenewManyBody, __: Receive) -> Response:
    """Renew many holdings of one holder in one statement (a process holding many leases renews
    them together). Each holding is renewed or reported lost exactly as a single renew would."""
    holdings = [(ref.name, ref.generation) for ref in body.leases]
    names = [name for name, _ in holdings]
    context.limits.batch(names)
    context.caller.require_client("renew", *names)
    renewals = await context.operations.renew_many(
        holdings, body.holder, context.limits.ttl(body.ttl_seconds), context.caller.name
    )
    return renewals_json(*renewals)


async def release(context: Context, path: LeasePath, body: ReleaseRequest, _: Receive) -> Response:
    """Expire the holding at once; the row and its generation stay. Releasing again is a no-op."""
    caller = context.caller
    caller.require_client("release", path.name)
    lease = await context.operations.release(
        path.name, body.holder, body.generation, caller.name, body.grant
    )
    return lease_json(lease)


@router.post("/{name}/force-release", responses=problem_responses(401, 403, 404, 409))
async def force_release(name: LeaseName, caller: CallerDep, operations: OperationsDep) -> LeaseOut:
    """Operators only: end whatever holding there is and move the generation past it, so fences
    refuse the old holder from now on. Recorded as an event naming the operator. 409
    `generation-exhausted` when the lease is at the largest generation (none to move to)."""
    caller.require("admin", "force-release", name)
    return LeaseOut.of(await operations.force_release(name, caller.label))


@router.get("/{name}", responses=problem_responses(401, 403, 404))
async def get_lease(name: LeaseName, caller: CallerDep, operations: OperationsDep) -> LeaseOut:
    caller.require("reader", "read", name)
    lease = await operations.get_lease(name)
    if lease is None:
        raise LeaseNotFound(name)
    return LeaseOut.of(lease)


@router.get("", responses=problem_responses(401, 403))
async def list_leases(
    caller: CallerDep,
    operations: OperationsDep,
    limits: LimitsDep,
    prefix: Annotated[str, Query(max_length=NAME_MAX_LENGTH, pattern=r"^[A-Za-z0-9._:-]*$")] = "",
    limit: Annotated[int | None, Query(description="Page size.")] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> LeasePage:
    """Leases in name order, under a name prefix (one of the caller's namespaces, unless it may
    read every name); follow `next_cursor` for more."""
    caller.require("reader", "list leases")
    if not caller.owns(prefix):
        raise Forbidden(caller.label, "list leases", prefix or "(every name)")
    items, next_cursor = await operations.list_leases(prefix, limits.page_size(limit), cursor)
    return LeasePage(items=[LeaseOut.of(lease) for lease in items], next_cursor=next_cursor)
