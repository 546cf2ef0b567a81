"""Job windows: claim and complete an occurrence under a lease, and reads."""

from __future__ import annotations

from tenure_server.app.decisions import DECISION_ATTEMPTS, still_moving
from tenure_server.app.ports import WindowStore
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
        for _ in range(DECISION_ATTEMPTS):
            window = await self._window_store.claim_window(job, key, holding, when)
            if window is not None:
                self._sink.record(window_event("claimed", window))
                return window
            current, lease, not_due = await self._window_store.explain_window(
                job, key, holding, when
            )
            refusal = claim_refusal(holding, current, lease, job, key, not_due)
            if refusal is not None:
                raise refusal
        raise still_moving("claim")

    async def complete(self, job: str, key: str, holding: Holding) -> Window:
        for _ in range(DECISION_ATTEMPTS):
            window = await self._window_store.complete_window(job, key, holding)
            if window is not None:
                self._sink.record(window_event("completed", window))
                return window
            current, lease, _ = await self._window_store.explain_window(job, key, holding)
            outcome = complete_outcome(holding, current, lease, job, key)
            if isinstance(outcome, Window):
                return outcome
            if outcome is not None:
                raise outcome
        raise still_moving("complete")

    async def get_window(self, job: str, key: str) -> Window | None:
        return await self._window_store.get_window(job, key)

    async def list_windows(
        self, job: str, limit: int, cursor: str | None
    ) -> tuple[list[Window], str | None]:
        rows = await self._window_store.list_windows(job, decode_cursor(cursor), limit + 1)
        return page(rows, limit, lambda window: window.window)
