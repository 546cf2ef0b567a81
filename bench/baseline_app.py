"""Baseline 1: the naive FastAPI endpoint. The same acquire, renew and release statements as the
service (read from its SQL files at start-up, so they cannot drift), run through an asyncpg
pool sized like the service's; a pydantic body and nothing else: no limits, no auth, no logging,
no metrics, no response model. Also a constant endpoint that answers the same body without
touching the database, for the framework's own cost. Served by run.py as

    uvicorn baseline_app:create_app --factory --app-dir bench --workers 2 \\
        --loop uvloop --http httptools --no-access-log

with BENCH_DATABASE_URL set. Paths and bodies are the service's, so one load script drives both.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from workloads import acquire_args, queries, release_args, renew_args

POOL_MIN_SIZE, POOL_MAX_SIZE = 2, 10  # the service's defaults


class AcquireBody(BaseModel):
    holder: str
    ttl_seconds: float


class RenewBody(BaseModel):
    holder: str
    generation: int
    ttl_seconds: float


class ReleaseBody(BaseModel):
    holder: str
    generation: int
    grant: str


def _answer(row: asyncpg.Record | None) -> dict[str, Any] | JSONResponse:
    if row is None:
        return JSONResponse({"detail": "refused"}, status_code=409)
    answer = dict(row)
    # The service's name for it, which the load scripts read to release what they acquired.
    answer["grant"] = answer.pop("grant_id")
    return answer


def create_app() -> FastAPI:
    dsn = os.environ["BENCH_DATABASE_URL"]
    q = queries()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with asyncpg.create_pool(
            dsn,
            min_size=POOL_MIN_SIZE,
            max_size=POOL_MAX_SIZE,
            server_settings={"default_transaction_isolation": "read committed"},
        ) as pool:
            app.state.pool = pool
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/readyz", response_model=None)
    async def ready() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/leases/{name}/acquire", response_model=None)
    async def acquire(
        name: str, body: AcquireBody, request: Request
    ) -> dict[str, Any] | JSONResponse:
        pool: asyncpg.Pool[asyncpg.Record] = request.app.state.pool
        row = await pool.fetchrow(
            q["acquire_lease"], *acquire_args(name, body.holder, body.ttl_seconds)
        )
        return _answer(row)

    @app.post("/v1/leases/{name}/renew", response_model=None)
    async def renew(name: str, body: RenewBody, request: Request) -> dict[str, Any] | JSONResponse:
        pool: asyncpg.Pool[asyncpg.Record] = request.app.state.pool
        row = await pool.fetchrow(
            q["renew_lease"], *renew_args(name, body.holder, body.generation, body.ttl_seconds)
        )
        return _answer(row)

    @app.post("/v1/constant/{name}/acquire", response_model=None)
    async def constant(name: str, body: AcquireBody) -> dict[str, Any]:
        """No database: what FastAPI and uvicorn alone cost per request (a diagnostic)."""
        return {"name": name, "holder": body.holder, "generation": 1, "held": True}

    @app.post("/v1/leases/{name}/release", response_model=None)
    async def release(
        name: str, body: ReleaseBody, request: Request
    ) -> dict[str, Any] | JSONResponse:
        pool: asyncpg.Pool[asyncpg.Record] = request.app.state.pool
        row = await pool.fetchrow(
            q["release_lease"], *release_args(name, body.holder, body.generation, body.grant)
        )
        return _answer(row)

    return app
