"""A "payments" API that refuses payouts from a job that lost its lease (FastAPI, PostgreSQL).

    scripts/serve                                          # terminal 1: Tenure on :8080
    TENURE_URL=http://127.0.0.1:8080 \\
        .venv/bin/uvicorn --factory examples.payments_api:create_app --port 8081   # terminal 2
    TENURE_URL=http://127.0.0.1:8080 PAYMENTS_URL=http://127.0.0.1:8081 \\
        .venv/bin/python examples/daily_close.py 2026-09-25                      # terminal 3
    .venv/bin/tenure status --watch          # terminal 4 (optional): refusals as they happen

The API keeps its payouts in its own PostgreSQL: `$PAYMENTS_DATABASE_URL`, or, when unset, an
embedded one in `.tenure/payments-pgdata` (pgserver, from the `server` extra). The fence it keeps
is in its own database. With `$TENURE_URL` set (as in terminal 3; `$TENURE_TOKEN` too when
Tenure has authentication on: a client of the lease's and of `payouts`' namespaces), each token is
first verified with Tenure as well (`RemoteFenceStore`), so that a refused payout shows where
operators look: a `fence.rejected` event on Tenure's stream, in `tenure status --watch` and on
/ui. The check in the payout's own transaction is still what makes the write safe.

Every POST needs `Fencing-Token: <lease>/<generation>` (FencingMiddleware answers 428, 400 or
409 otherwise, before the handler runs) and an `Idempotency-Key`. The payout is written in the
transaction that checked the token (`store.connection`, a dependency), so even with many
replicas of this API a payout from generation 7 cannot land after one from generation 8. One
fence covers every payout (`resource=`): once a newer holder of the job paid any store, the old
one is refused for all of them. A repeated idempotency key returns the first payout (200).

`create_app` takes options that tests and the chaos harness use (they run this API as their
fenced downstream app, through tests/support/payments.py): `fences`, the store to keep the
fences in instead (a `MemoryFenceStore`, a `RemoteFenceStore`: they check in front of the
handler, so the payout commits in a transaction of its own), `resource`, what one fence covers
instead of every payout, and `tenure_url`, Tenure's URL instead of `$TENURE_URL` ("": none).
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations at runtime,
# and the fenced-connection dependency is built inside create_app, out of reach of string ones.
import os
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import asynccontextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any

import asyncpg
from fastapi import Depends, FastAPI, Header, Response
from pydantic import BaseModel, Field

from tenure import AsyncTenure, FenceStore, FencingMiddleware, RemoteFenceStore, accepted_token
from tenure.pg import PooledConnection, PostgresFenceStore

ENV_DATABASE_URL = "PAYMENTS_DATABASE_URL"
ENV_TENURE_URL = "TENURE_URL"
EMBEDDED_DATA_DIR = Path(".tenure/payments-pgdata")  # .tenure/ is git-ignored

SCHEMA = """
CREATE TABLE IF NOT EXISTS payouts (
    idempotency_key text PRIMARY KEY,
    store           bigint NOT NULL,
    day             date NOT NULL,
    amount_cents    bigint NOT NULL CHECK (amount_cents >= 0),
    fencing_token   text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
)
"""
# The primary key decides between two payouts with one key: the second inserts nothing.
INSERT_PAYOUT = """
INSERT INTO payouts (idempotency_key, store, day, amount_cents, fencing_token)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING idempotency_key, store, day, amount_cents, fencing_token, created_at
"""
SELECT_PAYOUT = """
SELECT idempotency_key, store, day, amount_cents, fencing_token, created_at
  FROM payouts WHERE idempotency_key = $1
"""
LIST_PAYOUTS = """
SELECT idempotency_key, store, day, amount_cents, fencing_token, created_at
  FROM payouts WHERE day = $1 ORDER BY created_at
"""


class PayoutIn(BaseModel):
    store: int
    day: date
    amount_cents: int = Field(ge=0)


class Payout(PayoutIn):
    idempotency_key: str
    fencing_token: str
    created_at: datetime


def database_url() -> str:
    """`$PAYMENTS_DATABASE_URL`, else an embedded PostgreSQL for trying the example."""
    given = os.environ.get(ENV_DATABASE_URL)
    if given:
        return given
    from pgserver.postgres_server import get_server  # the `server` extra; only without a URL

    EMBEDDED_DATA_DIR.mkdir(parents=True, exist_ok=True)
    return str(get_server(EMBEDDED_DATA_DIR, cleanup_mode="stop").get_uri())


def every_payout(scope: MutableMapping[str, Any]) -> str:
    """The resource key: one fence covers every payout."""
    return "payouts"


def create_app(
    url: str | None = None,
    *,
    fences: FenceStore | None = None,
    resource: Callable[[MutableMapping[str, Any]], str] = every_payout,
    tenure_url: str | None = None,
) -> FastAPI:
    """The payments API on the database at `url` (default: see `database_url`), its fences in
    that database unless `fences` is given, verified with Tenure first when `tenure_url` (or
    `$TENURE_URL`) is set (see the module's docstring)."""
    if tenure_url is None:
        tenure_url = os.environ.get(ENV_TENURE_URL)
    tenure = AsyncTenure.from_env(tenure_url) if tenure_url and fences is None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with asyncpg.create_pool(url or database_url(), min_size=1, max_size=10) as pool:
            app.state.pool = pool
            if isinstance(store, PostgresFenceStore):
                await store.ensure_schema()
            await pool.execute(SCHEMA)
            yield
        if tenure is not None:
            await tenure.aclose()

    async def transaction() -> AsyncIterator[PooledConnection]:
        """A transaction of its own, for a payout whose fence is kept elsewhere."""
        async with app.state.pool.acquire() as connection, connection.transaction():
            yield connection

    app = FastAPI(title="payments", lifespan=lifespan)
    # The pool exists once the lifespan has started; the store asks for it when it needs it.
    store = fences if fences is not None else PostgresFenceStore(lambda: app.state.pool)
    checked = store.connection if isinstance(store, PostgresFenceStore) else transaction
    # scope="function": the transaction commits before the response is sent.
    Fenced = Annotated[PooledConnection, Depends(checked, scope="function")]

    @app.post("/payouts", status_code=201)
    async def pay(
        body: PayoutIn,
        idempotency_key: Annotated[str, Header(min_length=1, max_length=200)],
        connection: Fenced,
        response: Response,
    ) -> Payout:
        """Pay a store once per idempotency key, under the fence checked in this transaction."""
        token = accepted_token()
        if token is None:  # FencingMiddleware requires one for every POST
            raise RuntimeError("FencingMiddleware is not in front of the payments API")
        fencing_token = f"{token.lease}/{token.generation}"
        row = await connection.fetchrow(
            INSERT_PAYOUT,
            idempotency_key,
            body.store,
            body.day,
            body.amount_cents,
            fencing_token,
        )
        if row is None:  # paid before under this key: answer with the first payout
            row = await connection.fetchrow(SELECT_PAYOUT, idempotency_key)
            response.status_code = 200
        return Payout.model_validate(dict(row or {}))

    @app.get("/payouts")
    async def payouts(day: date) -> list[Payout]:
        rows = await app.state.pool.fetch(LIST_PAYOUTS, day)
        return [Payout.model_validate(dict(row)) for row in rows]

    app.add_middleware(FencingMiddleware, store=store, resource=resource)
    if tenure is not None:  # added last, so it runs first: Tenure sees (and streams) refusals
        app.add_middleware(FencingMiddleware, store=RemoteFenceStore(tenure), resource=resource)
    return app
