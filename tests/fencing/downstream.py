"""A protected "payments" service, run as its own OS process by the timeline tests.

downstream.py STORE PORT TARGET
    STORE memory: fences in this process's memory (TARGET unused, "-");
    STORE remote: fences in Tenure at TARGET (its URL);
    STORE postgres: fences and payments in the PostgreSQL at TARGET (this service's own
    database), each payment written in the transaction that checked its token.

POST /payments {"writer": …} needs a Fencing-Token; GET /payments lists what was written, in
order, with the generation each write ran under. GET /healthz answers once it serves.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations at runtime, and
# the fenced-connection dependency is built inside the app factory, out of reach of string ones.
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import asyncpg
import uvicorn
from fastapi import Depends, FastAPI

from tenure import (
    AsyncTenure,
    FencingMiddleware,
    MemoryFenceStore,
    RemoteFenceStore,
    accepted_token,
)
from tenure.pg import PooledConnection, PostgresFenceStore

PAYMENTS_TABLE = """
CREATE TABLE IF NOT EXISTS payments (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    writer     text NOT NULL,
    generation bigint NOT NULL
)
"""


def _generation() -> int:
    accepted = accepted_token()
    if accepted is None:
        raise RuntimeError("the middleware let a request through without a token")
    return accepted.generation


def in_memory(store: MemoryFenceStore | RemoteFenceStore) -> FastAPI:
    """Payments kept in a list: this process is the whole resource."""
    written: list[dict[str, Any]] = []
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/payments", status_code=201)
    async def pay(body: dict[str, str]) -> dict[str, Any]:
        written.append({"writer": body["writer"], "generation": _generation()})
        return written[-1]

    @app.get("/payments")
    async def payments() -> list[dict[str, Any]]:
        return written

    app.add_middleware(FencingMiddleware, store=store)
    return app


def in_postgres(database_url: str) -> FastAPI:
    """Payments in this service's own database, written in the fence's transaction."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with asyncpg.create_pool(database_url, min_size=1, max_size=5) as pool:
            app.state.pool = pool
            await store.ensure_schema()
            await pool.execute(PAYMENTS_TABLE)
            yield

    app = FastAPI(lifespan=lifespan)
    store = PostgresFenceStore(lambda: app.state.pool)
    Fenced = Annotated[PooledConnection, Depends(store.connection, scope="function")]

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/payments", status_code=201)
    async def pay(body: dict[str, str], connection: Fenced) -> dict[str, Any]:
        generation = _generation()
        await connection.execute(
            "INSERT INTO payments (writer, generation) VALUES ($1, $2)", body["writer"], generation
        )
        return {"writer": body["writer"], "generation": generation}

    @app.get("/payments")
    async def payments() -> list[dict[str, Any]]:
        rows = await app.state.pool.fetch("SELECT writer, generation FROM payments ORDER BY id")
        return [dict(row) for row in rows]

    app.add_middleware(FencingMiddleware, store=store)
    return app


def main(store: str, port: str, target: str) -> None:
    if store == "memory":
        app = in_memory(MemoryFenceStore())
    elif store == "remote":
        app = in_memory(RemoteFenceStore(AsyncTenure(target)))
    elif store == "postgres":
        app = in_postgres(target)
    else:
        sys.exit(f"unknown store {store!r}")
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning", lifespan="on")


if __name__ == "__main__":
    main(*sys.argv[1:])
