"""`once_per`: the decorator form of `run_once` / `arun_once` for schedulers (see
`tenure._executor`); it picks the sync or the async run by the client it is given."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, overload

from tenure._async.client import AsyncTenure
from tenure._async.executor import arun_scheduled
from tenure._client import warn_clock_ignored
from tenure._config import DEFAULT_EARLY_TOLERANCE, DEFAULT_TTL
from tenure._executor import Occurrences, RunContext, RunResult
from tenure._models import JobSpec
from tenure._sync.client import Tenure
from tenure._sync.executor import run_scheduled

if TYPE_CHECKING:
    from tenure.schedule import KeyFormat

__all__ = ["once_per"]

T = TypeVar("T")
Params = ParamSpec("Params")


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
    clock: Callable[[], datetime] | None = ...,
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
    clock: Callable[[], datetime] | None = ...,
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
    clock: Callable[[], datetime] | None = None,
    register: bool | JobSpec = False,
) -> Any:
    """Decorate a job function so each call runs it once for the schedule's current occurrence.

        @once_per("close-day", cron="5 0 * * *", tz="America/Sao_Paulo", key="previous_day",
                  client=client)
        def close_day(ctx: RunContext) -> None: ...

        close_day()   # from APScheduler, Celery beat, cron…: returns a RunResult

    The window is resolved at call time by the service (`client.resolve_window`) from `cron`
    and `tz` (an IANA zone): the most recent occurrence at or before now by the database's
    clock, or the next one if that is due within `early_tolerance` seconds, for a scheduler
    that fires a hair early; this host's clock decides nothing (`clock` is deprecated and
    ignored). With an `AsyncTenure` client the function
    must be a coroutine function and the decorated one is awaited. Extra call arguments reach
    `fn` after `ctx`. `register=True` registers the job on first use with this schedule
    (deadline: one hour); pass a `JobSpec` to choose its deadline and max runtime.
    """
    from tenure import schedule  # lazy: cronsim is needed only with schedules

    schedule.check_cron(cron)
    schedule.check_timezone(tz)
    if clock is not None:
        warn_clock_ignored()
    spec = register if isinstance(register, JobSpec) else None
    if register is True:
        spec = JobSpec(schedule=cron, timezone=tz, key=key, lease=lease)
    occurrences = Occurrences(
        job=job,
        cron=cron,
        tz=tz,
        key=key,
        ttl=ttl,
        lease=lease,
        wait=wait,
        early_tolerance=early_tolerance,
        register=spec,
    )

    def decorate(fn: Callable[..., Any]) -> Callable[..., object]:
        if isinstance(client, AsyncTenure) != inspect.iscoroutinefunction(fn):
            raise TypeError(
                "a coroutine function goes with an AsyncTenure client, a plain function with Tenure"
            )
        if isinstance(client, AsyncTenure):
            return arun_scheduled(client, occurrences, fn)
        return run_scheduled(client, occurrences, fn)

    return decorate
