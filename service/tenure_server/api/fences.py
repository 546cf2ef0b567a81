"""/v1/fences: the highest generation each resource has accepted. Both routes are hot: their
actions are here, their routes and express lanes come from api/hot_routes.py."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.types import Receive

from tenure_server.api.batch_bodies import VerifyManyBody
from tenure_server.api.dependencies import Context
from tenure_server.api.paths import NoPath, ResourcePath
from tenure_server.api.problems import problem_body
from tenure_server.api.schemas import (
    FenceOut,
    VerifyRequest,
    as_json,
    verifications_json,
)
from tenure_server.domain.fences import Fence
from tenure_server.domain.requests import Verify


# No second validation of the answer (see leases.py).
async def verify(context: Context, path: ResourcePath, body: VerifyRequest, _: Receive) -> Response:
    """Accept a generation equal to or above the highest seen for this resource (and record it);
    refuse a lower one with 409 `stale-generation`, and one the lease never handed out with 422
    `unknown-generation`."""
    context.caller.require_client("verify fences", path.resource, body.lease)
    fence = await context.operations.verify_fence(path.resource, body.lease, body.generation)
    return as_json(FenceOut.of(fence))


async def verify_many(context: Context, _: NoPath, body: VerifyManyBody, __: Receive) -> Response:
    """Verify many resources' fences in one statement (a job about to write to many resources
    checks its generation on all of them at once). Each is accepted, or refused with the problem
    a single verify would answer."""
    verifies = [Verify(ref.resource, ref.lease, ref.generation) for ref in body.fences]
    resources = [verify.resource for verify in verifies]
    context.limits.batch(resources, "fences", "resource")
    context.caller.require_client(
        "verify fences", *resources, *(verify.lease for verify in verifies)
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
