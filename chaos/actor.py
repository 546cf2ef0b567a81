"""One client of the workload: a holder identity that acquires, renews and releases leases, writes
under them through both fences and to the side-effect log, claims and completes windows — and
records every request in the history.

Outcomes: an answer is `ok`; a 4xx answer is `fail` (the service or the fence refused: nothing
happened); no answer, a timeout or a 5xx is `unknown` (it may have happened). The client's belief
that it holds a lease is the product's own `tenure._renewal.LeaseClock` (deadline = send time +
TTL) unless the `arrival-deadline` variant swaps in the broken clock.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

import asyncpg
import httpx

from chaos import variants
from chaos.history import Outcome, Recorder, micros
from tenure import NO_RETRY, AsyncTenure, Lease, LeaseLost, TenureError, Window
from tenure._renewal import LeaseClock

WRITE_SQL = "INSERT INTO chaos_writes (lease, holder, generation, worker) VALUES ($1, $2, $3, $4)"
PAYOUT = {"store": 0, "day": "2026-09-25", "amount_cents": 0}  # only its fence matters here
# What a fenced SQL write may fail with when the database or the way to it fails. asyncpg's
# InternalClientError ("another operation is in progress") comes from a pooled connection that a
# proxy reset while the database was starting up (F4, F10): uncaught, it killed workers of a run.
DATABASE_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)


class Belief(Protocol):
    """Until when a client believes it holds a lease (monotonic clock)."""

    interval: float

    @property
    def deadline(self) -> float: ...

    def acquired(self, sent: float, received: float) -> None: ...
    def renewed(self, sent: float, received: float) -> bool: ...
    def expired(self, now: float) -> bool: ...
    def next_renewal(self) -> float: ...


class SendTimeBelief:
    """The product's clock: the lease counts as held until the last successful request's send
    time + TTL; an answer that arrives after that deadline does not count."""

    def __init__(self, ttl: float) -> None:
        self._clock = LeaseClock(ttl)
        self.interval = self._clock.interval

    @property
    def deadline(self) -> float:
        return self._clock.deadline

    def acquired(self, sent: float, received: float) -> None:
        self._clock.acquired(sent)

    def renewed(self, sent: float, received: float) -> bool:
        return self._clock.renewed(sent, received)

    def expired(self, now: float) -> bool:
        return self._clock.expired(now)

    def next_renewal(self) -> float:
        return self._clock.next_renewal()


@dataclass
class Holding:
    lease: str
    generation: int
    ttl: float
    belief: Belief
    start: float
    acquired_at: int | None
    grant: str | None = None  # the latest grant answered; a release names it
    renewals: asyncio.Event = field(default_factory=asyncio.Event)  # set: renewing allowed
    renewer: asyncio.Task[None] | None = None
    lost: bool = False
    done: bool = False

    def held(self) -> bool:
        """Whether the client still believes it holds the lease, now."""
        return not self.lost and not self.belief.expired(time.monotonic())


def classify(error: BaseException) -> tuple[Outcome, str]:
    """`fail` for a refusal the service answered (4xx), `unknown` for anything else."""
    if isinstance(error, TenureError):
        slug = (error.type or "").rsplit("/", 1)[-1] or type(error).__name__
        if error.status is not None and error.status < 500:
            return "fail", slug
        return "unknown", slug
    return "unknown", type(error).__name__


def _lease_facts(lease: Lease) -> dict[str, Any]:
    return {
        "generation": lease.generation,
        "acquired_at": micros(lease.acquired_at),
        "expires_at": micros(lease.expires_at),
        "remaining": lease.expires_in_seconds,
    }


class Actor:
    """A holder: its clients (one per service replica), its fenced writers, its records."""

    def __init__(
        self,
        name: str,
        recorder: Recorder,
        services: list[str],
        *,
        rng: random.Random,
        pool: asyncpg.Pool[asyncpg.Record] | None,
        http: httpx.AsyncClient | None,
        downstream: str | None,
        variant: str = "correct",
        timeout: float = 1.0,
    ) -> None:
        self.name = name
        self.recorder = recorder
        self.holder = f"{name}:{rng.getrandbits(32):08x}"
        self.clients = [
            AsyncTenure(url, holder=self.holder, timeout=timeout, retry=NO_RETRY)
            for url in services
        ]
        self.rng = rng
        self.pool = pool
        self.http = http
        self.downstream = downstream
        self.variant = variant
        self.timeout = timeout

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()

    def _client(self) -> tuple[int, AsyncTenure]:
        index = self.rng.randrange(len(self.clients))
        return index, self.clients[index]

    def _belief(self, ttl: float) -> Belief:
        if self.variant == "arrival-deadline":
            return variants.ArrivalTimeBelief(ttl)
        return SendTimeBelief(ttl)

    # Leases ------------------------------------------------------------------------------------

    async def acquire(self, lease: str, ttl: float, wait: float = 0.0) -> Holding | None:
        replica, client = self._client()
        pending = self.recorder.invoke(
            "acquire", lease, holder=self.holder, ttl=ttl, replica=replica, wait=wait
        )
        try:
            answer = await asyncio.wait_for(
                client.acquire(lease, ttl, wait=wait), wait + self.timeout
            )
        except (TenureError, TimeoutError) as error:
            outcome, slug = classify(error)
            self.recorder.complete(pending, outcome, error=slug)
            return None
        received = time.monotonic()
        belief = self._belief(ttl)
        belief.acquired(pending.sent, received)
        facts = _lease_facts(answer)
        self.recorder.complete(pending, "ok", received, deadline=belief.deadline, **facts)
        holding = Holding(
            lease, answer.generation, ttl, belief, pending.sent, facts["acquired_at"], answer.grant
        )
        holding.renewals.set()
        return holding

    def start_renewing(self, holding: Holding) -> None:
        holding.renewer = asyncio.create_task(self._renew_until_done(holding))

    async def _renew_until_done(self, holding: Holding) -> None:
        belief = holding.belief
        while not holding.done:
            await asyncio.sleep(max(0.0, belief.next_renewal() - time.monotonic()))
            await holding.renewals.wait()
            if holding.done:
                return
            if belief.expired(time.monotonic()):
                holding.lost = True
                return
            if not await self._renew(holding):
                return

    async def _renew(self, holding: Holding) -> bool:
        """One renewal; False once the holding is lost."""
        replica, client = self._client()
        pending = self.recorder.invoke(
            "renew",
            holding.lease,
            holder=self.holder,
            generation=holding.generation,
            ttl=holding.ttl,
            replica=replica,
        )
        timeout = max(0.05, min(self.timeout, holding.belief.deadline - pending.sent))
        try:
            answer = await asyncio.wait_for(
                client.renew(holding.lease, holding.ttl, holding.generation), timeout
            )
        except (TenureError, TimeoutError) as error:
            outcome, slug = classify(error)
            self.recorder.complete(pending, outcome, error=slug, generation=holding.generation)
            if outcome == "fail":
                holding.lost = True
                return False
            await asyncio.sleep(min(0.05, holding.belief.interval))
            return True
        received = time.monotonic()
        counted = holding.belief.renewed(pending.sent, received)
        self.recorder.complete(
            pending,
            "ok",
            received,
            deadline=holding.belief.deadline,
            late=not counted,
            **_lease_facts(answer),
        )
        holding.lost = holding.lost or not counted
        if counted:
            holding.grant = answer.grant
        return counted

    def abandon(self, holding: Holding) -> None:
        """Stop believing and renewing, without releasing (a client that walks away or dies):
        the lease expires and the next holder takes it over."""
        holding.done = True
        holding.renewals.set()
        if holding.renewer is not None:
            holding.renewer.cancel()
        stop = time.monotonic()
        self.recorder.write(
            {
                "type": "belief",
                "lease": holding.lease,
                "generation": holding.generation,
                "holder": self.holder,
                "start": holding.start,
                "end": min(holding.belief.deadline, stop),
            }
        )

    async def release(self, holding: Holding) -> None:
        """Stop believing, then release (a courtesy: the lease expires by itself anyway)."""
        self.abandon(holding)
        replica, client = self._client()
        pending = self.recorder.invoke(
            "release",
            holding.lease,
            holder=self.holder,
            generation=holding.generation,
            replica=replica,
        )
        try:
            answer = await asyncio.wait_for(
                client.release(holding.lease, holding.generation, grant=holding.grant),
                self.timeout,
            )
        except (TenureError, TimeoutError) as error:
            outcome, slug = classify(error)
            self.recorder.complete(pending, outcome, error=slug, generation=holding.generation)
            return
        self.recorder.complete(pending, "ok", **_lease_facts(answer))

    # Writes ------------------------------------------------------------------------------------

    def effect(self, holding: Holding) -> bool:
        """Append to the side-effect log, only while the belief holds (no fence protects it)."""
        now = time.monotonic()
        if holding.lost or holding.belief.expired(now):
            return False
        self.recorder.write(
            {
                "type": "effect",
                "lease": holding.lease,
                "generation": holding.generation,
                "holder": self.holder,
                "t": now,
            }
        )
        return True

    async def write_sql(self, holding: Holding, hold: float = 0.0) -> Outcome:
        """A fenced write to `chaos_writes`, in Tenure's database. With `hold`, the transaction
        stays open that long after the fence check, renewals paused (a long or stalled writer:
        renewing from inside would wait on its own lock)."""
        if self.pool is None:
            raise RuntimeError("this actor has no database pool")
        pending = self.recorder.invoke(
            "write_sql",
            holding.lease,
            holder=self.holder,
            generation=holding.generation,
            hold=hold,
        )
        if hold:
            holding.renewals.clear()
        try:
            async with self.pool.acquire(timeout=5) as connection:
                fence = variants.fenced(
                    self.variant, connection, holding.lease, self.holder, holding.generation
                )
                async with fence as fenced:
                    if hold:
                        await asyncio.sleep(hold)
                    await fenced.execute(
                        WRITE_SQL, holding.lease, self.holder, holding.generation, self.name
                    )
        except LeaseLost:
            self.recorder.complete(pending, "fail", error="lease-lost")
            return "fail"
        except DATABASE_ERRORS as error:
            self.recorder.complete(pending, "unknown", error=type(error).__name__)
            return "unknown"
        finally:
            holding.renewals.set()
        self.recorder.complete(pending, "ok")
        return "ok"

    async def write_http(self, holding: Holding) -> Outcome:
        """A payout to the downstream app (the payments example, a PostgreSQL fence per lease)."""
        if self.http is None or self.downstream is None:
            raise RuntimeError("this actor has no downstream app")
        pending = self.recorder.invoke(
            "write_http", holding.lease, holder=self.holder, generation=holding.generation
        )
        token = f"{holding.lease}/{holding.generation}"
        key = f"{self.holder}/{uuid.uuid4().hex}"  # chaos.facts reads the holder back from it
        try:
            response = await self.http.post(
                f"{self.downstream}/payouts",
                json=PAYOUT,
                headers={"Fencing-Token": token, "Idempotency-Key": key},
            )
        except httpx.HTTPError as error:
            self.recorder.complete(pending, "unknown", error=type(error).__name__)
            return "unknown"
        outcome: Outcome = (
            "ok"
            if response.status_code < 300
            else "fail"
            if response.status_code < 500
            else "unknown"
        )
        slug = None if outcome == "ok" else _problem(response)
        self.recorder.complete(pending, outcome, error=slug, status=response.status_code)
        return outcome

    # Windows -----------------------------------------------------------------------------------

    async def window(self, holding: Holding, job: str, key: str, *, complete: bool) -> bool:
        """Claim (or complete) window `key` of `job` under the holding; True if it went through."""
        replica, client = self._client()
        op = "complete" if complete else "claim"
        pending = self.recorder.invoke(
            op,
            holding.lease,
            holder=self.holder,
            generation=holding.generation,
            window=f"{job}/{key}",
            replica=replica,
        )
        call = client.complete_window if complete else client.claim_window
        try:
            answer: Window = await asyncio.wait_for(
                call(job, key, holding.lease, holding.generation), self.timeout
            )
        except (TenureError, TimeoutError) as error:
            outcome, slug = classify(error)
            self.recorder.complete(pending, outcome, error=slug)
            return False
        self.recorder.complete(pending, "ok", attempt=answer.attempt)
        return True


def _problem(response: httpx.Response) -> str:
    try:
        kind = response.json().get("type", "")
    except ValueError:
        kind = ""
    return str(kind).rsplit("/", 1)[-1] or f"http-{response.status_code}"
