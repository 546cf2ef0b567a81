"""The service's use cases in one object, as the HTTP layer and the monitor receive them."""

from __future__ import annotations

from tenure_server.app.coalescing import NO_COALESCING, Coalescing
from tenure_server.app.fences import Fences
from tenure_server.app.leases import Leases
from tenure_server.app.lock_waits import LockWaits
from tenure_server.app.ports import Releases, Store
from tenure_server.app.windows import Windows
from tenure_server.domain.events import EventSink, NoSink
from tenure_server.domain.limits import DEFAULT_MAX_EARLY_TOLERANCE


class Operations(Leases, Windows, Fences):
    def __init__(
        self,
        store: Store,
        notifications: Releases,
        sink: EventSink | None = None,
        coalescing: Coalescing = NO_COALESCING,
        lock_waits: LockWaits | None = None,
        early_tolerance: float = DEFAULT_MAX_EARLY_TOLERANCE,
    ) -> None:
        # Every transition, refusal and fence decision is reported here (logs and metrics).
        events = sink or NoSink()
        Leases.__init__(self, store, notifications, events, coalescing, lock_waits)
        Windows.__init__(self, store, events, early_tolerance)
        Fences.__init__(self, store, events, coalescing)
