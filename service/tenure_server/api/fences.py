"""/v1/fences: the highest generation each resource has accepted."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import Receive

from tenure_server.api.dependencies import Context, ContextDep
from tenure_server.api.schemas import (
    FenceOut,
    ResourceName,
    VerifyRequest,
    as_json,
    problem_responses,
)

router = APIRouter(prefix="/v1/fences", tags=["fences"])


# A hot route: one dependency, and no second validation of the answer (see leases.py).
@router.post(
    "/{resource}/verify", response_model=FenceOut, responses=problem_responses(401, 403, 409)
)
async def verify(
    resource: ResourceName, body: VerifyRequest, request: Request, context: ContextDep
) -> Response:
    """Accept a generation equal to or above the highest seen for this resource (and record it);
    refuse a lower one with 409 `stale-generation`, and one the lease never handed out with 422
    `unknown-generation`."""
    return await verify_fence(context, resource, body, request.receive)


async def verify_fence(
    context: Context, resource: str, body: VerifyRequest, _: Receive
) -> Response:
    """The work of `verify`, which the express lane (api/express.py) calls too."""
    context.caller.require("client", "verify fences", resource, body.lease)
    fence = await context.operations.verify_fence(resource, body.lease, body.generation)
    return as_json(FenceOut.of(fence))
