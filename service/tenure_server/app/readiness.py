"""Readiness: the database answers, with every migration this version needs applied."""

from __future__ import annotations

import asyncio

from tenure_server.app.ports import HealthStore
from tenure_server.db.migrate import latest_version
from tenure_server.domain.errors import StorageUnavailable

READINESS_TIMEOUT_SECONDS = 2.0


async def check_ready(health: HealthStore) -> None:
    """The readiness check (also `tenure_ready` on /metrics): `StorageUnavailable` unless the
    database answers in time with every migration this version needs applied."""
    try:
        applied = await asyncio.wait_for(health.applied_migrations(), READINESS_TIMEOUT_SECONDS)
    except TimeoutError:
        raise StorageUnavailable("database did not answer the readiness check in time") from None
    if not applied or applied[-1] < latest_version():
        raise StorageUnavailable("database schema is behind this version: run `tenure migrate`")
