"""Runs the statements of `sql/health.sql`: what readiness and start-up ask the database."""

from __future__ import annotations

from datetime import datetime

from tenure_server.db.connections import Connections
from tenure_server.db.sql import load

QUERIES = load("health.sql")


class Health(Connections):
    async def applied_migrations(self) -> list[int]:
        return [row["version"] for row in await self._fetch(QUERIES["applied_migrations"])]

    async def database_now(self) -> datetime:
        row = await self._fetchrow(QUERIES["database_now"])
        assert row is not None
        now: datetime = row["now"]
        return now

    async def synchronous_commit(self) -> str:
        row = await self._fetchrow(QUERIES["synchronous_commit"])
        assert row is not None
        return str(row[0])
