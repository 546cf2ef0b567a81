"""Named statements of one `.sql` file, run through the main repository's connections (so that
driver errors are translated in one place, `Repository.connection`)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, LiteralString

from tenure_server.db.repository import Record, Repository


class Statements:
    """Base of a repository whose public methods are the statements of `QUERIES`."""

    QUERIES: Mapping[str, LiteralString] = MappingProxyType({})

    def __init__(self, repository: Repository) -> None:
        self._repository = repository

    async def _fetch(self, query: str, *args: Any) -> list[Record]:
        async with self._repository.connection() as connection:
            return await connection.fetch(self.QUERIES[query], *args)

    async def _fetchrow(self, query: str, *args: Any) -> Record | None:
        async with self._repository.connection() as connection:
            return await connection.fetchrow(self.QUERIES[query], *args)
