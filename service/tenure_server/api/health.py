"""Liveness, readiness, and the documentation of each problem type."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from tenure_server.api import problems
from tenure_server.api.dependencies import HealthDep
from tenure_server.api.schemas import Health, Problem
from tenure_server.app.readiness import check_ready

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Health:
    """The process answers. It says nothing about the database (see /readyz)."""
    return Health(status="ok")


@router.get(
    "/readyz",
    responses={503: {"model": Problem, "content": {"application/problem+json": {}}}},
)
async def readyz(health: HealthDep) -> Health:
    """Ready when the database answers and every migration this version needs is applied."""
    await check_ready(health)
    return Health(status="ok")


@router.get("/problems/{slug}", include_in_schema=False)
async def problem_type(slug: str) -> JSONResponse:
    """What a problem `type` means and what to do about it, from the catalogue."""
    kind = problems.describe(slug)
    if kind is None:
        return problems.problem_response(problems.NOT_FOUND, f"no problem type {slug!r}")
    return JSONResponse(
        {
            "type": kind.type,
            "title": kind.title,
            "status": kind.status,
            "description": kind.description,
        }
    )
