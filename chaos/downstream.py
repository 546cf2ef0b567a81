"""The protected downstream app: `python -m chaos.downstream PORT DATABASE_URL`.

POST /writes/{resource} with `Fencing-Token: <lease>/<generation>` passes `FencingMiddleware`
with the PostgreSQL fence store (one fence per resource: the path's last segment, the lease's
name) and inserts a row into `chaos_http_writes` in the same transaction as the fence check
(`store.connection`, committed before the response is sent). GET /healthz answers once it serves.
The rows, with their commit timestamps, are property 4's evidence for the HTTP path.
"""

# No `from __future__ import annotations`: FastAPI reads the handler's annotations at runtime,
# and the fenced-connection dependency is built inside the app factory.
import sys
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

import asyncpg
import uvicorn
from fastapi import Depends, FastAPI

from tenure import FencingMiddleware, accepted_token
from tenure.pg import PooledConnection, PostgresFenceStore

TABLE = """
CREATE TABLE IF NOT EXISTS chaos_http_writes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource   text NOT NULL,
    holder     text NOT NULL,
    generation bigint NOT NULL,
    worker     text NOT NULL
)
"""
INSERT = (
    "INSERT INTO chaos_http_writes (resource, holder, generation, worker) VALUES ($1, $2, $3, $4)"
)


def resource_of(scope: MutableMapping[str, Any]) -> str:
    """One fence per lease: /writes/<lease> is fenced by <lease>'s generations."""
    return str(scope["path"]).rstrip("/").rsplit("/", 1)[-1]


def create_app(database_url: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with asyncpg.create_pool(database_url, min_size=2, max_size=10) as pool:
            app.state.pool = pool
            await store.ensure_schema()
            await pool.execute(TABLE)
            yield

    app = FastAPI(lifespan=lifespan)
    store = PostgresFenceStore(lambda: app.state.pool)
    Fenced = Annotated[PooledConnection, Depends(store.connection, scope="function")]

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/writes/{resource}", status_code=201)
    async def write(resource: str, body: dict[str, str], connection: Fenced) -> dict[str, Any]:
        accepted = accepted_token()
        if accepted is None:
            raise RuntimeError("FencingMiddleware let a request through without a token")
        await connection.execute(
            INSERT, resource, body["holder"], accepted.generation, body["worker"]
        )
        return {"resource": resource, "generation": accepted.generation}

    app.add_middleware(FencingMiddleware, store=store, resource=resource_of)
    return app


def main(port: str, database_url: str) -> None:
    uvicorn.run(create_app(database_url), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main(*sys.argv[1:])
