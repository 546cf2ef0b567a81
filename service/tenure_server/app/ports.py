"""What the use cases need from storage, as Protocols: db.Repository provides all of them, and
a use case names only the port it uses, so its dependencies read off its constructor.

Each method is one deciding statement or one read (see the SQL beside db.Repository): a
decision returns None (or leaves a name out) when it changed nothing, and the use case then
reads the state to explain why."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, TypeVar

from tenure_server.domain.alerts import OpenAlert
from tenure_server.domain.events import FenceEvent
from tenure_server.domain.fences import Fence, VerifyFacts
from tenure_server.domain.history import JobRecord, LeaseRecord, NotableEvent
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.leases import HoldingFacts, Lease
from tenure_server.domain.principals import ForeignHolding, Principal, ReservedUse
from tenure_server.domain.requests import (
    Acquire,
    Acquired,
    ForceReleased,
    HandedOver,
    Release,
    Renew,
    Verify,
)
from tenure_server.domain.status import JobFacts, LeaseView
from tenure_server.domain.windows import (
    Due,
    Holding,
    Schedule,
    Window,
    WindowFacts,
)


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
    async def hand_over_lease(self, release: Release, waiter: Acquire) -> HandedOver | None: ...
    async def release_coalesced(self, releases: list[Release]) -> dict[str, Lease]: ...
    async def await_lease(self, name: str, seconds: float) -> None: ...
    async def force_release_lease(self, name: str, actor: str) -> ForceReleased | None: ...
    async def explain_holding(
        self,
        name: str,
        holder: str | None,
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
    def released(self, name: str) -> None: ...


class EventChannel(Protocol):
    """Where the event stream's batches are published to every replica (db.notifications:
    NOTIFY on the listening connection)."""

    @property
    def listening(self) -> bool: ...
    async def publish_events(self, payloads: list[str]) -> None: ...


class Store(LeaseStore, WindowStore, FenceStore, Protocol):
    """Every port at once: what `Operations` is built from."""


class HealthStore(Protocol):
    async def applied_migrations(self) -> list[int]: ...
    async def database_now(self) -> datetime: ...


class JobStore(Protocol):
    """Job definitions, the facts their status is computed from, and their history."""

    async def put_job(self, name: str, spec: JobSpec) -> Job | None: ...
    async def get_job(self, name: str) -> Job | None: ...
    async def delete_job(self, name: str) -> bool: ...
    async def list_jobs(
        self, after: str, prefix: str, prefix_end: str | None, limit: int
    ) -> list[Job]: ...
    async def jobs_named(self, names: Sequence[str]) -> list[Job]: ...
    async def unregistered_jobs(
        self, after: str, prefix: str, end: str | None, limit: int
    ) -> list[str]: ...
    async def window_facts(
        self, jobs: Sequence[str], named: Sequence[tuple[str, str]]
    ) -> dict[str, JobFacts]: ...
    async def job_events(self, job: str, before: int | None, limit: int) -> list[JobRecord]: ...


class HistoryStore(Protocol):
    """The lease and notable history, open alerts and the webhook outbox, as the API and the
    status reader read them."""

    async def lease_events(
        self, lease: str, before: int | None, limit: int
    ) -> list[LeaseRecord]: ...
    async def recent_events(self, limit: int) -> list[NotableEvent]: ...
    async def open_alerts(self, limit: int) -> list[OpenAlert]: ...
    async def monitored_leases(
        self, limit: int, named: Sequence[str] = ()
    ) -> list[tuple[LeaseView, float | None]]: ...
    async def delivery_backlog(self) -> dict[str, int]: ...


class ReservedNames(Protocol):
    """Uses of the names reserved to the service by anything but the service."""

    async def end_foreign_holding(self, lease: str, service: str) -> ForeignHolding | None: ...
    async def reserved_names(
        self, prefix: str, own: Sequence[str], recent_seconds: float, limit: int
    ) -> list[ReservedUse]: ...


class Authenticator(Protocol):
    """Who a request's Authorization header names (adapters.auth: the tokens file)."""

    def authenticate(self, authorization: str | None) -> Principal: ...


class StreamSubscription(Protocol):
    """One consumer of the event stream (adapters.stream.Subscription)."""

    when_dropped: Callable[[], None] | None

    @property
    def ending(self) -> str | None: ...
    @property
    def last_event_id(self) -> str: ...
    async def take(self, wait_seconds: float) -> bytes: ...


class StreamSettings(Protocol):
    @property
    def keepalive_seconds(self) -> float: ...


Subscription = TypeVar("Subscription", bound=StreamSubscription)


class EventStream(Protocol[Subscription]):
    """The live event stream (adapters.stream.EventHub), as its route subscribes to it."""

    @property
    def config(self) -> StreamSettings: ...
    def subscribe(
        self, visible: Callable[[str], bool], last_event_id: str | None, principal: str | None
    ) -> Subscription: ...
    def unsubscribe(self, subscription: Subscription) -> None: ...


class Observer(Protocol):
    def observe(self, amount: float) -> None: ...


class Histogram(Protocol):
    def labels(self, *values: str) -> Observer: ...


class RequestMetrics(Protocol):
    """The histogram of HTTP requests by method, route and status (adapters.telemetry)."""

    @property
    def requests(self) -> Histogram: ...
