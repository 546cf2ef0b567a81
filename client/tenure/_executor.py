"""Run a job once per occurrence: acquire its lease, claim its window, run, complete, release.

    result = run_once(client, "close-day", "2026-09-25", close_day)
    if not result.ran:
        log.info("skipped: %s", result.skipped)          # "held" or "completed"

- Another holder holds the job's lease: skip (`held`), no error — it is running right now.
- The window already completed: skip (`completed`) — an earlier or faster run did it.
- `fn(ctx)` raises: the window stays claimed but not completed, the lease is released, and the
  error propagates; the next run resumes the window (`ctx.attempt` 2). Write `fn` so that
  repeating a part of it does no harm: `ctx.idempotency_key(...)` names each effect.
- The lease is lost while `fn` runs: `LeaseLost` propagates (async: `fn` is cancelled first) and
  the window is not completed.

`once_per` is the decorator form for schedulers: it has the service resolve the window at call
time from the schedule — the occurrence the scheduler *meant* to run, by the database's clock, so
a run that starts late still lands in its own window instead of making a new one, and a host
whose clock is behind does not land in the one before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
)

from tenure._client import AsyncTenure, Tenure
from tenure._config import DEFAULT_EARLY_TOLERANCE, DEFAULT_TTL
from tenure._errors import LeaseHeld, WindowCompleted
from tenure._models import JobSpec
from tenure._tokens import fencing_headers, format_token, idempotency_key

if TYPE_CHECKING:
    from tenure.schedule import KeyFormat

__all__ = [
    "RunContext",
    "RunResult",
    "SkipReason",
    "arun_once",
    "once_per",
    "resolve_window",
    "run_once",
]

_log = logging.getLogger("tenure")

T = TypeVar("T")
Params = ParamSpec("Params")
SkipReason = Literal["held", "completed"]


class _Guard(Protocol):
    """What a context needs from a lease handle."""

    name: str

    @property
    def generation(self) -> int: ...

    @property
    def lost(self) -> bool: ...

    def check(self) -> None: ...


@dataclass(frozen=True, slots=True)
class RunContext:
    """What `fn` receives: which occurrence it runs, and the means to stay fenced."""

    job: str
    window: str
    attempt: int
    _guard: _Guard = field(repr=False)

    @property
    def lease(self) -> str:
        return self._guard.name

    @property
    def generation(self) -> int:
        return self._guard.generation

    @property
    def lost(self) -> bool:
        return self._guard.lost

    def check(self) -> None:
        """Raise `LeaseLost` if the lease is, or may be, lost. Call it between units of work."""
        self._guard.check()

    @property
    def fencing_token(self) -> str:
        return format_token(self.lease, self.generation)

    def fencing_headers(self) -> dict[str, str]:
        """`{"Fencing-Token": "<lease>/<generation>"}` for requests to a fenced resource."""
        return fencing_headers(self.lease, self.generation)

    def idempotency_key(self, *parts: object) -> str:
        """`job/window/part/…`: the same for every attempt of this occurrence, so a receiver
        that deduplicates by it applies each effect once (`close-day/2026-09-25/store/42`);
        never the same for two occurrences or parts (see `tenure.idempotency_key`)."""
        return idempotency_key(self.job, self.window, *parts)


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """Whether `fn` ran (else why not), which attempt it was, and what it returned."""

    job: str
    window: str
    ran: bool
    skipped: SkipReason | None = None
    attempt: int | None = None
    generation: int | None = None
    value: T | None = None

    @classmethod
    def skip(cls, job: str, window: str, reason: SkipReason) -> RunResult[T]:
        _log.info("job %r window %r skipped: %s", job, window, reason)
        return cls(job=job, window=window, ran=False, skipped=reason)


def run_once(
    client: Tenure,
    job: str,
    window: str,
    fn: Callable[[RunContext], T],
    *,
    ttl: float = DEFAULT_TTL,
    lease: str | None = None,
    wait: float = 0.0,
    renew_every: float | None = None,
    register: JobSpec | None = None,
) -> RunResult[T]:
    """Run `fn(ctx)` for this window of `job` unless it is running elsewhere or already done.

    `lease` defaults to the job's name; `wait` is how long to wait for a held lease before
    skipping. With `register`, the job is registered (once per client) so that the service
    watches its windows and alerts when one is not completed by its deadline. See the module
    docstring for what each outcome means.
    """
    if register is not None:
        client.register_job(job, _with_lease(register, lease))
    with contextlib.ExitStack() as stack:
        try:
            handle = stack.enter_context(
                client.lease(
                    job if lease is None else lease, ttl, wait=wait, renew_every=renew_every
                )
            )
        except LeaseHeld:
            return RunResult.skip(job, window, "held")
        try:
            claimed = client.claim_window(job, window, handle)
        except WindowCompleted:
            return RunResult.skip(job, window, "completed")
        value = fn(RunContext(job, window, claimed.attempt, handle))
        handle.check()
        client.complete_window(job, window, handle)
    return RunResult(job, window, True, None, claimed.attempt, handle.generation, value)


async def arun_once(
    client: AsyncTenure,
    job: str,
    window: str,
    fn: Callable[[RunContext], Awaitable[T]],
    *,
    ttl: float = DEFAULT_TTL,
    lease: str | None = None,
    wait: float = 0.0,
    renew_every: float | None = None,
    register: JobSpec | None = None,
) -> RunResult[T]:
    """As `run_once`, for a coroutine function; `fn` is cancelled if the lease is lost."""
    if register is not None:
        await client.register_job(job, _with_lease(register, lease))
    async with contextlib.AsyncExitStack() as stack:
        try:
            handle = await stack.enter_async_context(
                client.lease(
                    job if lease is None else lease, ttl, wait=wait, renew_every=renew_every
                )
            )
        except LeaseHeld:
            return RunResult.skip(job, window, "held")
        try:
            claimed = await client.claim_window(job, window, handle)
        except WindowCompleted:
            return RunResult.skip(job, window, "completed")
        value = await fn(RunContext(job, window, claimed.attempt, handle))
        handle.check()
        await client.complete_window(job, window, handle)
    return RunResult(job, window, True, None, claimed.attempt, handle.generation, value)


def _with_lease(spec: JobSpec, lease: str | None) -> JobSpec:
    """The run's lease is the job's, unless the spec names one."""
    if spec.lease is not None or lease is None:
        return spec
    return dataclasses.replace(spec, lease=lease)


def resolve_window(
    cron: str,
    tz: str,
    key: KeyFormat = "occurrence",
    *,
    now: datetime | None = None,
    early_tolerance: float = DEFAULT_EARLY_TOLERANCE,
) -> str:
    """The window key of the occurrence a scheduler firing at `now` meant to run, by this
    host's clock unless `now` is given; `client.resolve_window` asks the service's clock."""
    from tenure import schedule  # lazy: cronsim is needed only with schedules

    moment = datetime.now(UTC) if now is None else now.astimezone(UTC)
    # In UTC: adding to a local wall clock would be off by an hour across a DST change.
    return schedule.resolve(cron, tz, moment + timedelta(seconds=early_tolerance), key).window


@overload
def once_per(
    job: str,
    *,
    cron: str,
    tz: str,
    client: Tenure,
    key: KeyFormat = ...,
    ttl: float = ...,
    lease: str | None = ...,
    wait: float = ...,
    early_tolerance: float = ...,
    clock: Callable[[], datetime] = ...,
    register: bool | JobSpec = ...,
) -> Callable[[Callable[Concatenate[RunContext, Params], T]], Callable[Params, RunResult[T]]]: ...


@overload
def once_per(
    job: str,
    *,
    cron: str,
    tz: str,
    client: AsyncTenure,
    key: KeyFormat = ...,
    ttl: float = ...,
    lease: str | None = ...,
    wait: float = ...,
    early_tolerance: float = ...,
    clock: Callable[[], datetime] = ...,
    register: bool | JobSpec = ...,
) -> Callable[
    [Callable[Concatenate[RunContext, Params], Awaitable[T]]],
    Callable[Params, Awaitable[RunResult[T]]],
]: ...


def once_per(
    job: str,
    *,
    cron: str,
    tz: str,
    client: Tenure | AsyncTenure,
    key: KeyFormat = "occurrence",
    ttl: float = DEFAULT_TTL,
    lease: str | None = None,
    wait: float = 0.0,
    early_tolerance: float = DEFAULT_EARLY_TOLERANCE,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    register: bool | JobSpec = False,
) -> Any:
    """Decorate a job function so each call runs it once for the schedule's current occurrence.

        @once_per("close-day", cron="5 0 * * *", tz="America/Sao_Paulo", key="previous_day",
                  client=client)
        def close_day(ctx: RunContext) -> None: ...

        close_day()   # from APScheduler, Celery beat, cron…: returns a RunResult

    The window is resolved at call time by the service (`client.resolve_window`) from `cron`
    and `tz` (an IANA zone): the most recent occurrence at or before now by the database's
    clock, or the next one if `clock` (this host's) says it is due within `early_tolerance`
    seconds, for a scheduler that fires a hair early. With an `AsyncTenure` client the function
    must be a coroutine function and the decorated one is awaited. Extra call arguments reach
    `fn` after `ctx`. `register=True` registers the job on first use with this schedule
    (deadline: one hour); pass a `JobSpec` to choose its deadline and max runtime.
    """
    from tenure import schedule  # lazy: cronsim is needed only with schedules

    schedule.check_cron(cron)
    schedule.check_timezone(tz)
    spec = register if isinstance(register, JobSpec) else None
    if register is True:
        spec = JobSpec(schedule=cron, timezone=tz, key=key, lease=lease)

    def decorate(fn: Callable[..., Any]) -> Callable[..., object]:
        if isinstance(client, AsyncTenure) != inspect.iscoroutinefunction(fn):
            raise TypeError(
                "a coroutine function goes with an AsyncTenure client, a plain function with Tenure"
            )
        if isinstance(client, AsyncTenure):

            @functools.wraps(fn)
            async def run_async(*args: object, **kwargs: object) -> RunResult[object]:
                async def call(ctx: RunContext) -> object:
                    return await fn(ctx, *args, **kwargs)

                window = await client.resolve_window(
                    cron, tz, key, early_tolerance=early_tolerance, clock=clock
                )
                return await arun_once(
                    client, job, window, call, ttl=ttl, lease=lease, wait=wait, register=spec
                )

            return run_async

        @functools.wraps(fn)
        def run(*args: object, **kwargs: object) -> RunResult[object]:
            def call(ctx: RunContext) -> object:
                return fn(ctx, *args, **kwargs)

            window = client.resolve_window(
                cron, tz, key, early_tolerance=early_tolerance, clock=clock
            )
            return run_once(
                client, job, window, call, ttl=ttl, lease=lease, wait=wait, register=spec
            )

        return run

    return decorate
