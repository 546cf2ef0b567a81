"""Liveness, readiness, and the documentation of each problem type."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from tenure_server.api import problems
from tenure_server.api.dependencies import RepositoryDep
from tenure_server.api.schemas import Health, Problem
from tenure_server.db.migrate import latest_version
from tenure_server.db.repository import Repository
from tenure_server.domain.errors import StorageUnavailable

router = APIRouter(tags=["health"])

READINESS_TIMEOUT_SECONDS = 2.0


@router.get("/healthz")
async def healthz() -> Health:
    """The process answers. It says nothing about the database (see /readyz)."""
    return Health(status="ok")


@router.get(
    "/readyz",
    responses={503: {"model": Problem, "content": {"application/problem+json": {}}}},
)
async def readyz(repository: RepositoryDep) -> Health:
    """Ready when the database answers and every migration this version needs is applied."""
    await check_ready(repository)
    return Health(status="ok")


async def check_ready(repository: Repository) -> None:
    """The readiness check (also `tenure_ready` on /metrics): `StorageUnavailable` unless the
    database answers in time with every migration this version needs applied."""
    try:
        applied = await asyncio.wait_for(repository.applied_migrations(), READINESS_TIMEOUT_SECONDS)
    except TimeoutError:
        raise StorageUnavailable("database did not answer the readiness check in time") from None
    if not applied or applied[-1] < latest_version():
        raise StorageUnavailable("database schema is behind this version: run `tenure migrate`")


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
