"""Leases: acquire (now or waiting for a release), renew, release, force-release, and reads.

Single requests may share one statement with others that arrived together (app/coalescing.py);
whatever a shared statement leaves undecided, and an acquire or release that finds nobody to
share with, is decided alone, by the single statement (a renew: by the batch renew of one, and by
the single statement only if its row is locked). A release of a lease that a request of this
process waits for hands it over: the release and the waiter's acquire in one statement."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial

from tenure_server.app.coalescing import NO_COALESCING, Coalescing, batcher, first_per_name
from tenure_server.app.decisions import decide
from tenure_server.app.lock_waits import LockWaits
from tenure_server.app.ports import LeaseStore, Releases
from tenure_server.app.waiting import Parked, Waiters
from tenure_server.db.notifications import FALLBACK_POLL_SECONDS
from tenure_server.domain.errors import (
    LeaseHeld,
    RequestAbandoned,
    StorageUnavailable,
    TenureError,
)
from tenure_server.domain.events import EventSink, LeaseEvent
from tenure_server.domain.leases import (
    Lease,
    acquire_refusal,
    force_release_refusal,
    release_outcome,
    renew_refusal,
)
from tenure_server.domain.names import decode_cursor, page, prefix_upper_bound
from tenure_server.domain.requests import Acquire, Acquired, Release, Renew

# A waiter re-tries this long after the holding's expiry, so the expiry has surely passed.
EXPIRY_SLACK_SECONDS = 0.01


@dataclass(slots=True)
class _Turns:
    """The statement deciding identical acquires now, and the next one, which the identical
    requests arriving meanwhile wait for and share."""

    running: asyncio.Future[Acquired | None]
    waiting: asyncio.Future[Acquired | None] | None = None


def _arguments(acquire: Acquire) -> tuple[str, str, float, str | None]:
    return acquire.name, acquire.holder, acquire.ttl, acquire.principal


class Leases:
    def __init__(
        self,
        store: LeaseStore,
        notifications: Releases,
        sink: EventSink,
        coalescing: Coalescing = NO_COALESCING,
        lock_waits: LockWaits | None = None,
    ) -> None:
        self._lease_store = store
        self._notifications = notifications
        # Every transition and refusal is reported here (logs and metrics).
        self._sink = sink
        self._draining = asyncio.Event()
        # Renewals that wait on a row another transaction holds: a few, not the whole pool.
        self._lock_waits = lock_waits or LockWaits()
        # Acquires being decided alone: for identical ones to share the next statement.
        self._deciding: dict[Acquire, _Turns] = {}
        # Waiting acquires of this process: a release here hands the lease to the first.
        self._waiters = Waiters()
        self._acquires = batcher(coalescing, self._acquire_batch, self._decide_alone)
        # No `alone` for renews: deciding one alone (renew_leases of one) cost twice the CPU and
        # latency of a coalesced batch of one at one connection (bench/README.md, step 23).
        self._renews = batcher(coalescing, partial(first_per_name, decide=store.renew_coalesced))
        self._releases = batcher(
            coalescing, partial(first_per_name, decide=store.release_coalesced), self._release_alone
        )

    async def acquire(
        self,
        name: str,
        holder: str,
        ttl: float,
        *,
        principal: str | None = None,
        wait: float = 0.0,
        abandoned: asyncio.Event | None = None,
    ) -> Lease:
        """Take the lease now, or within `wait` seconds: woken by a release (NOTIFY) or at the
        holding's expiry by the database clock, never by polling. `abandoned` is set when the
        caller went away; a lease taken for nobody is released at once."""
        if wait <= 0:
            try:
                return (await self._acquire_now(name, holder, ttl, principal))[0]
            except LeaseHeld:
                self._sink.record(LeaseEvent("refused", name, holder, None))
                raise
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        awaited = False
        with self._notifications.subscribe(name) as released:
            while True:
                released.clear()
                try:
                    # Its own statement: a holding it withdraws must be no other request's.
                    awaiting = None if awaited else deadline - loop.time()
                    lease, began = await self._acquire_now(
                        name, holder, ttl, principal, shared=False, awaiting=awaiting
                    )
                except LeaseHeld as held:
                    awaited = True  # marked before the refusal was explained
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        self._sink.record(LeaseEvent("refused", name, holder, None))
                        raise
                    pause = min(remaining, held.retry_after_seconds + EXPIRY_SLACK_SECONDS)
                    if not self._notifications.listening:
                        pause = min(pause, FALLBACK_POLL_SECONDS)
                    parked = Parked(Acquire(name, holder, ttl, principal), released, abandoned)
                    handed = await self._waiters.park(parked, pause, self._draining)
                    if handed is None:
                        continue
                    lease, began = self._announced(handed)
                if abandoned is not None and abandoned.is_set():
                    # Withdraw only a holding this request began, and only while its grant is the
                    # latest: the same holder may hold it through another request (a retry,
                    # answered 200) that re-acquired or renewed before or after this one.
                    if began and lease.grant_id is not None:
                        await self._lease_store.release_lease(
                            name, holder, lease.generation, principal, lease.grant_id
                        )
                    raise RequestAbandoned(name)
                return lease

    def drain(self) -> None:
        """The process is shutting down: waiting acquires answer now instead of holding it up."""
        self._draining.set()

    async def _acquire_now(
        self,
        name: str,
        holder: str,
        ttl: float,
        principal: str | None,
        *,
        shared: bool = True,
        awaiting: float | None = None,
    ) -> tuple[Lease, bool]:
        """The lease, and whether this call began the holding (False: it extended it). Unless
        `shared` is False, the decision may be shared with identical concurrent requests (same
        grant): a waiting acquire, which withdraws its holding if its caller goes away, must not
        share one, or it would end the holding of a retry that was told it holds the lease.
        `awaiting`: the caller will wait that many seconds for a release, so a refusal marks the
        lease awaited before it is explained (releases notify only awaited leases). A release
        before the mark shows in the explanation, and the acquire is taken again; one after it
        notifies. The waiter parks in three statements, not two more after its refusal."""
        wanted = Acquire(name, holder, ttl, principal)

        async def statement(attempt: int) -> Acquired | None:
            if not shared:
                return await self._lease_store.acquire_lease(name, holder, ttl, principal)
            if attempt == 0 and self._acquires is not None:
                return await self._acquires.submit(wanted)  # shared, or else decided alone
            return await self._decide_alone(wanted)

        async def explain() -> TenureError | None:
            nonlocal awaiting
            if awaiting is not None:
                await self._lease_store.await_lease(name, awaiting)
                awaiting = None
            facts = await self._lease_store.explain_holding(name, holder, None, principal)
            return acquire_refusal(name, facts)

        return self._announced(await decide("acquire", statement, explain))

    def _announced(self, acquired: Acquired) -> tuple[Lease, bool]:
        """The lease, and whether a new holding began (its event is then recorded)."""
        lease, event = acquired
        if event is not None:
            self._sink.record(event)
        return lease, event is not None

    async def _decide_alone(self, acquire: Acquire) -> Acquired | None:
        """acquire_lease for one request, one statement at a time per identical request (same
        name, holder, TTL and principal). Identical requests that arrive while one runs share
        the next statement, sent when it is done (it would only have waited on the row lock):
        on a hot name, the requests a batch skipped would otherwise each queue a statement on
        the row lock, one commit after another. Every request a statement decides arrived
        before it was sent, so each may take the decision as its own, as in a batch; only the
        one that sent it is told it began a holding."""
        loop = asyncio.get_running_loop()
        turns = self._deciding.get(acquire)
        if turns is None:
            mine: asyncio.Future[Acquired | None] = loop.create_future()
            turns = self._deciding[acquire] = _Turns(mine)
        elif turns.waiting is not None:
            shared = turns.waiting
            await asyncio.wait([shared])
            if shared.cancelled():  # the request that was to send it went away
                return await self._lease_store.acquire_lease(*_arguments(acquire))
            outcome = shared.result()  # or the error its statement met
            return None if outcome is None else (outcome[0], None)
        else:
            mine = turns.waiting = loop.create_future()
            try:
                await asyncio.wait([turns.running])
            except asyncio.CancelledError:
                mine.cancel()
                turns.waiting = None
                if turns.running.done() and self._deciding.get(acquire) is turns:
                    del self._deciding[acquire]
                raise
            turns.running, turns.waiting = mine, None
        try:
            acquired = await self._lease_store.acquire_lease(*_arguments(acquire))
        except asyncio.CancelledError:
            mine.cancel()
            raise
        except Exception as error:
            mine.set_exception(error)
            mine.exception()  # retrieved: the sharers get it from result()
            raise
        finally:
            if turns.waiting is None and self._deciding.get(acquire) is turns:
                del self._deciding[acquire]  # nobody to hand the turn to
        mine.set_result(acquired)
        return acquired

    async def _acquire_batch(self, wanted: list[Acquire]) -> list[Acquired | None]:
        """One statement for acquires that arrived together. Identical requests (a client's
        retries, many callers of one holder) share one decision, and only the first is told
        that it began the holding; a different request for a name already in the batch is left
        undecided (None), as are names the statement refused or skipped."""
        first: dict[str, Acquire] = {}
        for acquire in wanted:
            first.setdefault(acquire.name, acquire)
        decided = await self._lease_store.acquire_leases(list(first.values()))
        answers: list[Acquired | None] = []
        announced: set[str] = set()
        for acquire in wanted:
            outcome = decided.get(acquire.name)
            if outcome is None or acquire != first[acquire.name]:
                answers.append(None)
            elif acquire.name in announced:
                answers.append((outcome[0], None))
            else:
                announced.add(acquire.name)
                answers.append(outcome)
        return answers

    async def renew(
        self, name: str, holder: str, generation: int, ttl: float, principal: str | None = None
    ) -> Lease:
        wanted = Renew(name, holder, generation, ttl, principal)

        async def statement(attempt: int) -> Lease | None:
            if attempt == 0 and self._renews is not None:
                lease = await self._renews.submit(wanted)
                if lease is not None:
                    return lease
            # Refused, or left undecided by the batch: decided as a batch of one.
            return await self._renew_alone(wanted)

        async def explain() -> TenureError:
            self._sink.record(LeaseEvent("renew_refused", name, holder, generation))
            facts = await self._lease_store.explain_holding(name, holder, generation, principal)
            return renew_refusal(name, generation, facts)

        return await decide("renew", statement, explain)

    async def _renew_alone(self, renew: Renew) -> Lease | None:
        """One renew decided as a batch of one: the lease, or None when refused."""
        [outcome] = await self._renew_holdings(
            [(renew.name, renew.generation)], renew.holder, renew.ttl, renew.principal
        )
        if isinstance(outcome, StorageUnavailable):  # its row stayed locked
            raise outcome
        return outcome

    async def renew_many(
        self,
        holdings: list[tuple[str, int]],
        holder: str,
        ttl: float,
        principal: str | None = None,
    ) -> tuple[list[Lease], list[tuple[str, int]], list[tuple[str, int]]]:
        """Renew many holdings of one holder in one statement: the renewed leases, the
        (name, generation) pairs that are lost (expired, released, taken over, or never held),
        and those left undecided (their row stayed locked)."""
        outcomes = await self._renew_holdings(holdings, holder, ttl, principal)
        renewed = [outcome for outcome in outcomes if isinstance(outcome, Lease)]
        lost, undecided = [], []
        for holding, outcome in zip(holdings, outcomes, strict=True):
            if outcome is None:
                lost.append(holding)
            elif isinstance(outcome, StorageUnavailable):
                undecided.append(holding)
        self._sink.record_many([LeaseEvent("renew_refused", n, holder, gen) for n, gen in lost])
        return renewed, lost, undecided

    async def _renew_holdings(
        self, holdings: list[tuple[str, int]], holder: str, ttl: float, principal: str | None
    ) -> list[Lease | StorageUnavailable | None]:
        """For each holding, in order: its lease renewed, None when refused, or why it was left
        undecided. One statement, which waits on no row; a row another transaction holds (a
        fenced one, FOR SHARE) is decided alone after its lock, in one of the process's places
        to wait (app/lock_waits.py), so one busy lease costs the others neither a decision nor a
        timeout, and busy leases take only those places of the pool."""
        renewed, refused = await self._lease_store.renew_leases(holdings, holder, ttl, principal)
        decided: dict[str, Lease | StorageUnavailable | None] = {name: None for name in refused}
        decided |= {lease.name: lease for lease in renewed}
        skipped = [(name, gen) for name, gen in holdings if name not in decided]
        alone = [self._renew_locked(name, holder, gen, ttl, principal) for name, gen in skipped]
        for (name, _), outcome in zip(skipped, await asyncio.gather(*alone), strict=True):
            decided[name] = outcome
        return [decided[name] for name, _ in holdings]

    async def _renew_locked(
        self, name: str, holder: str, generation: int, ttl: float, principal: str | None
    ) -> Lease | StorageUnavailable | None:
        """renew_lease for one holding whose row was locked: the lease, None when refused, or
        why it could not be decided (no place to wait came free, or the row was still locked at
        the lock timeout)."""
        try:
            async with self._lock_waits.place(name):
                return await self._lease_store.renew_lease(name, holder, generation, ttl, principal)
        except StorageUnavailable as error:
            return error

    async def release(
        self,
        name: str,
        holder: str,
        generation: int,
        principal: str | None,
        grant: str,
    ) -> Lease:
        wanted = Release(name, holder, generation, principal, grant)

        async def statement(attempt: int) -> Lease | None:
            parked = self._waiters.take(name) if attempt == 0 else None
            if parked is not None:  # a waiter here: it takes the lease in the same statement
                hand_over = partial(self._lease_store.hand_over_lease, wanted)
                lease = await self._waiters.hand_over(parked, hand_over)
            elif attempt == 0 and self._releases is not None:
                lease = await self._releases.submit(wanted)  # shared, or else decided alone
            else:
                lease = await self._release_alone(wanted)
            if lease is not None:
                self._notifications.released(name)
                self._sink.record(LeaseEvent("released", name, holder, generation))
            return lease

        async def explain() -> Lease | TenureError | None:
            facts = await self._lease_store.explain_holding(
                name, holder, generation, principal, grant
            )
            return release_outcome(name, generation, facts)

        return await decide("release", statement, explain)

    async def _release_alone(self, release: Release) -> Lease | None:
        return await self._lease_store.release_lease(
            release.name, release.holder, release.generation, release.principal, release.grant
        )

    async def force_release(self, name: str, actor: str) -> Lease:
        async def statement(_: int) -> Lease | None:
            forced = await self._lease_store.force_release_lease(name, actor)
            if forced is None:
                return None
            lease, event = forced
            self._notifications.released(name)
            self._sink.record(event)
            return lease

        async def explain() -> TenureError | None:
            facts = await self._lease_store.explain_holding(name, None, None, None)
            return force_release_refusal(name, facts)

        return await decide("force-release", statement, explain)

    async def get_lease(self, name: str) -> Lease | None:
        return await self._lease_store.get_lease(name)

    async def list_leases(
        self, prefix: str, limit: int, cursor: str | None
    ) -> tuple[list[Lease], str | None]:
        after = decode_cursor(cursor) or ""
        rows = await self._lease_store.list_leases(
            after, prefix, prefix_upper_bound(prefix), limit + 1
        )
        return page(rows, limit, lambda lease: lease.name)
