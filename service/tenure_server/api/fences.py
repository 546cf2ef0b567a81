"""/v1/fences: the highest generation each resource has accepted."""

from __future__ import annotations

from fastapi import APIRouter

from tenure_server.api.dependencies import CallerDep, OperationsDep
from tenure_server.api.schemas import FenceOut, ResourceName, VerifyRequest, problem_responses

router = APIRouter(prefix="/v1/fences", tags=["fences"])


@router.post("/{resource}/verify", responses=problem_responses(401, 403, 409))
async def verify(
    resource: ResourceName, body: VerifyRequest, caller: CallerDep, operations: OperationsDep
) -> FenceOut:
    """Accept a generation equal to or above the highest seen for this resource (and record it);
    refuse a lower one with 409 `stale-generation`, and one the lease never handed out with 422
    `unknown-generation`."""
    caller.require("client", "verify fences", resource, body.lease)
    return FenceOut.of(await operations.verify_fence(resource, body.lease, body.generation))
