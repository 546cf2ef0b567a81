"""/v1/fences: the highest generation each resource has accepted."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response
from starlette.types import Receive

from tenure_server.api.dependencies import Context, ContextDep
from tenure_server.api.problems import problem_body
from tenure_server.api.schemas import (
    FenceOut,
    ResourceName,
    VerifyManyRequest,
    VerifyManyResult,
    VerifyRequest,
    as_json,
    problem_responses,
    verifications_json,
)
from tenure_server.db.repository import Verify
from tenure_server.domain.fences import Fence

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


@router.post("/verify", response_model=VerifyManyResult, responses=problem_responses(401, 403))
async def verify_many(body: VerifyManyRequest, request: Request, context: ContextDep) -> Response:
    """Verify many resources' fences in one statement (a job about to write to many resources
    checks its generation on all of them at once). Each is accepted, or refused with the problem
    a single verify would answer."""
    return await verify_many_fences(context, body, request.receive)


async def verify_many_fences(context: Context, body: VerifyManyRequest, _: Receive) -> Response:
    """The work of `verify_many`, which the express lane calls too."""
    verifies = [Verify(ref.resource, ref.lease, ref.generation) for ref in body.fences]
    resources = [verify.resource for verify in verifies]
    context.limits.batch(resources, "fences", "resource")
    context.caller.require(
        "client", "verify fences", *resources, *(verify.lease for verify in verifies)
    )
    accepted: list[Fence] = []
    refused: list[dict[str, Any]] = []
    outcomes = await context.operations.verify_fences(verifies)
    for verify, outcome in zip(verifies, outcomes, strict=True):
        if isinstance(outcome, Fence):
            accepted.append(outcome)
        else:
            refused.append(
                {
                    "resource": verify.resource,
                    "lease": verify.lease,
                    "generation": verify.generation,
                    "problem": problem_body(outcome),
                }
            )
    return verifications_json(accepted, refused)
