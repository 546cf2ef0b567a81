"""Start-up: migrations are safe to run from many replicas at once, and the service refuses a
database that could lose an acknowledged generation."""

from __future__ import annotations

import asyncio
import gc
import logging

import asyncpg
import pytest

from tenure_server.db.migrate import available, migrate
from tenure_server.server.app import UnsafeDatabase, create_app
from tenure_server.server.settings import Settings
from tests.support import postgres


async def test_concurrent_migrations_apply_each_version_once(server_url: str) -> None:
    """Eight replicas migrating an empty database at once: no error, every version once."""
    name = postgres.unique_name("tenure_m")
    url = await postgres.create_database(server_url, name)
    try:
        results = await asyncio.gather(*(migrate(url) for _ in range(8)))
        applied = sorted(version for result in results for version in result)
        assert applied == [migration.version for migration in available()]
        assert await migrate(url) == []
        connection = await asyncpg.connect(url)
        try:
            tables = {
                row[0]
                for row in await connection.fetch(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            }
        finally:
            await connection.close()
        assert {"leases", "lease_events", "job_windows", "fences", "tenure_migrations"} <= tables
    finally:
        await postgres.drop_database(server_url, name)


async def asynchronous_commit(database_url: str) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        database = await connection.fetchval("SELECT current_database()")
        await connection.execute(f"ALTER DATABASE {database} SET synchronous_commit = off")
    finally:
        await connection.close()


async def test_refuses_to_start_with_synchronous_commit_off(database_url: str) -> None:
    """With synchronous_commit=off a crash could grant one generation twice: start-up fails."""
    await asynchronous_commit(database_url)
    app = create_app(Settings(database_url=database_url))
    with pytest.raises(UnsafeDatabase, match="synchronous_commit"):
        async with app.router.lifespan_context(app):
            pass


async def test_an_explicit_setting_allows_it_with_a_warning(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """TENURE_ALLOW_ASYNC_COMMIT starts the service anyway and says loudly that it is unsafe."""
    await asynchronous_commit(database_url)
    app = create_app(Settings(database_url=database_url, allow_async_commit=True))
    with caplog.at_level(logging.WARNING, logger="tenure.server"):
        async with app.router.lifespan_context(app):
            pass
    assert "UNSAFE" in caplog.text


def test_invalid_configuration_fails_with_a_clear_message() -> None:
    """Inconsistent limits are refused at start-up, naming the setting (an option of
    `tenure serve` as typed)."""
    from tenure_server.server.cli import ConfigurationError, load_settings

    with pytest.raises(ConfigurationError, match="TENURE_MIN_TTL_SECONDS"):
        load_settings(min_ttl_seconds=10, max_ttl_seconds=5)
    with pytest.raises(ConfigurationError, match="--port"):
        load_settings(port=70000)


async def test_start_up_objects_stay_out_of_full_collections_while_serving(
    database_url: str,
) -> None:
    """A full collection over start-up's objects paused every request (bench/README.md, step
    12); they are frozen while the service runs and handed back to the collector when it stops."""
    app = create_app(Settings(database_url=database_url))
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0
