"""Run a job once per occurrence with a client (what each outcome means: `tenure._executor`),
and the function `once_per` makes of a job function."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from tenure._config import DEFAULT_TTL
from tenure._errors import LeaseHeld, WindowCompleted, WindowNotDue
from tenure._executor import Occurrences, RunContext, RunResult, with_lease
from tenure._models import JobSpec
from tenure._tracing import run_span

if TYPE_CHECKING:
    from tenure._async.client import AsyncTenure

__all__ = ["arun_once", "arun_scheduled"]

T = TypeVar("T")


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
    """Run `fn(ctx)` for this window of `job` unless it is running elsewhere or already done.

    `lease` defaults to the job's name; `wait` is how long to wait for a held lease before
    skipping. With `register`, the job is registered (once per client) so that the service
    watches its windows and alerts when one is not completed by its deadline. With an
    `AsyncTenure` client (`arun_once`), `fn` is a coroutine function, cancelled if the lease is
    lost. What each outcome means: `tenure._executor`, docs/client.md.
    """
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(run_span(job, window))
        if register is not None:
            await client.register_job(job, with_lease(register, lease))
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
        except WindowNotDue as not_due:
            return RunResult.skip(job, window, "not_due", not_due.detail)
        value = await fn(RunContext(job, window, claimed.attempt, handle))
        handle.check()
        await client.complete_window(job, window, handle)
    return RunResult(job, window, True, None, claimed.attempt, handle.generation, value)


def arun_scheduled(
    client: AsyncTenure, occurrences: Occurrences, fn: Callable[..., Awaitable[object]]
) -> Callable[..., Awaitable[RunResult[object]]]:
    """`fn` decorated by `once_per`: each call has the service resolve the window, then runs
    `fn(ctx, *args, **kwargs)` once for it."""

    @functools.wraps(fn)
    async def run(*args: object, **kwargs: object) -> RunResult[object]:
        async def call(ctx: RunContext) -> object:
            return await fn(ctx, *args, **kwargs)

        window = await client.resolve_window(
            occurrences.cron,
            occurrences.tz,
            occurrences.key,
            early_tolerance=occurrences.early_tolerance,
        )
        return await arun_once(
            client,
            occurrences.job,
            window,
            call,
            ttl=occurrences.ttl,
            lease=occurrences.lease,
            wait=occurrences.wait,
            register=occurrences.register,
        )

    return run
