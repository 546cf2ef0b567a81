"""What the use cases need from storage, as Protocols: db.Repository provides all of them, and
a use case names only the port it uses, so its dependencies read off its constructor.

Each method is one deciding statement or one read (see the SQL beside db.Repository): a
decision returns None (or leaves a name out) when it changed nothing, and the use case then
reads the state to explain why."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from tenure_server.db.fences import Verify
from tenure_server.db.leases import Acquire, Acquired, ForceReleased, Release, Renew
from tenure_server.domain.events import FenceEvent
from tenure_server.domain.fences import Fence, VerifyFacts
from tenure_server.domain.leases import HoldingFacts, Lease
from tenure_server.domain.windows import Due, Holding, Schedule, Window, WindowFacts


class LeaseStore(Protocol):
    async def acquire_lease(
        self, name: str, holder: str, ttl: float, principal: str | None
    ) -> Acquired | None: ...
    async def acquire_leases(self, wanted: list[Acquire]) -> dict[str, Acquired]: ...
    async def renew_lease(
        self, name: str, holder: str, generation: int, ttl: float, principal: str | None
    ) -> Lease | None: ...
    async def renew_coalesced(self, renews: list[Renew]) -> dict[str, Lease]: ...
    async def renew_leases(
        self, holdings: list[tuple[str, int]], holder: str, ttl: float, principal: str | None
    ) -> tuple[list[Lease], set[str]]: ...
    async def release_lease(
        self, name: str, holder: str, generation: int, principal: str | None, grant: str
    ) -> Lease | None: ...
    async def release_coalesced(self, releases: list[Release]) -> dict[str, Lease]: ...
    async def await_lease(self, name: str, seconds: float) -> None: ...
    async def force_release_lease(self, name: str, actor: str) -> ForceReleased | None: ...
    async def explain_acquire(self, name: str) -> tuple[Lease | None, int | None]: ...
    async def explain_holding(
        self,
        name: str,
        holder: str,
        generation: int | None,
        principal: str | None,
        grant: str | None = ...,
    ) -> HoldingFacts: ...
    async def get_lease(self, name: str) -> Lease | None: ...
    async def list_leases(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Lease]: ...


class WindowStore(Protocol):
    async def window_schedule(self, job: str) -> Schedule | None: ...
    async def claim_window(
        self, job: str, window: str, holding: Holding, due: Due
    ) -> Window | None: ...
    async def complete_window(self, job: str, window: str, holding: Holding) -> Window | None: ...
    async def explain_window(
        self, job: str, window: str, holding: Holding, due: Due = ...
    ) -> WindowFacts: ...
    async def get_window(self, job: str, window: str) -> Window | None: ...
    async def list_windows(self, job: str, before: str | None, limit: int) -> list[Window]: ...


class FenceStore(Protocol):
    async def verify_fence(self, resource: str, lease: str, generation: int) -> Fence | None: ...
    async def verify_fences(self, verifies: list[Verify]) -> dict[str, Fence]: ...
    async def explain_fences(self, verifies: list[Verify]) -> list[VerifyFacts]: ...
    async def record_fence_rejections(self, rejections: Sequence[FenceEvent]) -> None: ...


class Releases(Protocol):
    """Wake-ups when a lease is released (db.notifications: LISTEN/NOTIFY)."""

    @property
    def listening(self) -> bool: ...
    def subscribe(self, name: str) -> AbstractContextManager[asyncio.Event]: ...


class EventChannel(Protocol):
    """Where the event stream's batches are published to every replica (db.notifications:
    NOTIFY on the listening connection)."""

    @property
    def listening(self) -> bool: ...
    async def publish_events(self, payloads: list[str]) -> None: ...


class Store(LeaseStore, WindowStore, FenceStore, Protocol):
    """Every port at once: what `Operations` is built from."""
