"""Job windows: claim and complete an occurrence under a lease, and reads."""

from __future__ import annotations

from tenure_server.app.decisions import decide
from tenure_server.app.ports import WindowStore
from tenure_server.domain.errors import TenureError
from tenure_server.domain.events import EventSink, window_event
from tenure_server.domain.names import decode_cursor, page
from tenure_server.domain.windows import (
    Holding,
    Window,
    claim_refusal,
    complete_outcome,
    due,
)


class Windows:
    def __init__(self, store: WindowStore, sink: EventSink, early_tolerance: float) -> None:
        self._window_store = store
        self._sink = sink
        # How long before its occurrence a registered job's window may be claimed.
        self._early_tolerance = early_tolerance

    async def claim(self, job: str, key: str, holding: Holding) -> Window:
        registered = await self._window_store.window_schedule(job)
        when = due(registered, key, self._early_tolerance)

        async def statement(_: int) -> Window | None:
            window = await self._window_store.claim_window(job, key, holding, when)
            if window is not None:
                self._sink.record(window_event("claimed", window))
            return window

        async def explain() -> TenureError | None:
            facts = await self._window_store.explain_window(job, key, holding, when)
            return claim_refusal(facts, holding, job, key)

        return await decide("claim", statement, explain)

    async def complete(self, job: str, key: str, holding: Holding) -> Window:
        async def statement(_: int) -> Window | None:
            window = await self._window_store.complete_window(job, key, holding)
            if window is not None:
                self._sink.record(window_event("completed", window))
            return window

        async def explain() -> Window | TenureError | None:
            facts = await self._window_store.explain_window(job, key, holding)
            return complete_outcome(facts, holding, job, key)

        return await decide("complete", statement, explain)

    async def get_window(self, job: str, key: str) -> Window | None:
        return await self._window_store.get_window(job, key)

    async def list_windows(
        self, job: str, limit: int, cursor: str | None
    ) -> tuple[list[Window], str | None]:
        rows = await self._window_store.list_windows(job, decode_cursor(cursor), limit + 1)
        return page(rows, limit, lambda window: window.window)
