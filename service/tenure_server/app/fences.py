"""Fences: verify a generation against a resource's fence, singly or many at once, and record
why a verify was refused."""

from __future__ import annotations

from functools import partial

from tenure_server.app.coalescing import (
    NO_COALESCING,
    Coalescing,
    batcher,
    disjoint_batches,
    first_per_name,
)
from tenure_server.app.decisions import decide
from tenure_server.app.ports import FenceStore
from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)
from tenure_server.domain.events import EventSink, FenceEvent, fence_rejection
from tenure_server.domain.fences import Fence, verify_refusal
from tenure_server.domain.requests import Verify


class Fences:
    def __init__(
        self, store: FenceStore, sink: EventSink, coalescing: Coalescing = NO_COALESCING
    ) -> None:
        self._fence_store = store
        self._sink = sink
        self._verifies = batcher(coalescing, partial(first_per_name, decide=store.verify_fences))
        # Batch verifies that arrive together share a statement too (fewer statements and
        # commits for PostgreSQL: bench/README.md, step 26); one found alone runs its own.
        self._verify_batches = batcher(
            coalescing,
            partial(disjoint_batches, decide=store.verify_fences, max_items=coalescing.max_items),
            store.verify_fences,
        )

    async def verify_fence(self, resource: str, lease: str, generation: int) -> Fence:
        verify = Verify(resource, lease, generation)

        async def statement(attempt: int) -> Fence | None:
            fence = None
            if attempt == 0 and self._verifies is not None:
                fence = await self._verifies.submit(verify)
            if fence is None:  # refused, or left undecided by the batch: decided alone
                fence = await self._fence_store.verify_fence(resource, lease, generation)
            if fence is not None:
                self._sink.record(FenceEvent(resource, lease, generation))
            return fence

        async def explain() -> TenureError | None:
            [refusal] = await self._fence_refusals([verify])
            return refusal

        return await decide("verify", statement, explain)

    async def verify_fences(self, verifies: list[Verify]) -> list[Fence | TenureError]:
        """Many verifies (of distinct resources) in one statement, each decided as
        `verify_fence` decides it: for each, in order, the fence that accepted it or why not."""
        if self._verify_batches is None:
            accepted = await self._fence_store.verify_fences(verifies)
        else:  # also holds the fences of the batches that shared the statement: none of these
            accepted = await self._verify_batches.submit(verifies)
        self._sink.record_many(
            [
                FenceEvent(verify.resource, verify.lease, verify.generation)
                for verify in verifies
                if verify.resource in accepted
            ]
        )
        refused = [verify for verify in verifies if verify.resource not in accepted]
        decided: dict[str, Fence | TenureError] = {}
        if refused:
            for verify, refusal in zip(refused, await self._fence_refusals(refused), strict=True):
                if refusal is None:  # the fence or lease moved since the statement
                    decided[verify.resource] = await self._verify_alone(verify)
                else:
                    decided[verify.resource] = refusal
        return [
            accepted[verify.resource] if verify.resource in accepted else decided[verify.resource]
            for verify in verifies
        ]

    async def _verify_alone(self, verify: Verify) -> Fence | TenureError:
        try:
            return await self.verify_fence(verify.resource, verify.lease, verify.generation)
        except (StaleGeneration, UnknownGeneration, FenceLeaseMismatch) as refusal:
            return refusal

    async def _fence_refusals(self, verifies: list[Verify]) -> list[TenureError | None]:
        """Why each verify the fences refused was refused, recorded as history; None where the
        state has moved since (the verify may pass now)."""
        explained = await self._fence_store.explain_fences(verifies)
        refusals = [
            verify_refusal(verify.resource, verify.lease, verify.generation, facts)
            for verify, facts in zip(verifies, explained, strict=True)
        ]
        events = [
            event
            for verify, refusal in zip(verifies, refusals, strict=True)
            if refusal is not None
            and (
                event := fence_rejection(verify.resource, verify.lease, verify.generation, refusal)
            )
        ]
        self._sink.record_many(events)
        if events:
            await self._fence_store.record_fence_rejections(events)
        return refusals
