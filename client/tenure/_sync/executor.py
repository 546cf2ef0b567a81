# Generated from tenure/_async/executor.py by scripts/generate_sync.py: edit that one.
"""Run a job once per occurrence with a client (what each outcome means: `tenure._executor`),
and the function `once_per` makes of a job function."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from tenure._config import DEFAULT_TTL
from tenure._errors import LeaseHeld, WindowCompleted, WindowNotDue
from tenure._executor import Occurrences, RunContext, RunResult, with_lease
from tenure._models import JobSpec
from tenure._tracing import run_span

if TYPE_CHECKING:
    from tenure._sync.client import Tenure

__all__ = ["run_once", "run_scheduled"]

T = TypeVar("T")


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
    watches its windows and alerts when one is not completed by its deadline. With an
    `AsyncTenure` client (`arun_once`), `fn` is a coroutine function, cancelled if the lease is
    lost. What each outcome means: `tenure._executor`, docs/client.md.
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(run_span(job, window))
        if register is not None:
            client.register_job(job, with_lease(register, lease))
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
        except WindowNotDue as not_due:
            return RunResult.skip(job, window, "not_due", not_due.detail)
        value = fn(RunContext(job, window, claimed.attempt, handle))
        handle.check()
        client.complete_window(job, window, handle)
    return RunResult(job, window, True, None, claimed.attempt, handle.generation, value)


def run_scheduled(
    client: Tenure, occurrences: Occurrences, fn: Callable[..., object]
) -> Callable[..., RunResult[object]]:
    """`fn` decorated by `once_per`: each call has the service resolve the window, then runs
    `fn(ctx, *args, **kwargs)` once for it."""

    @functools.wraps(fn)
    def run(*args: object, **kwargs: object) -> RunResult[object]:
        def call(ctx: RunContext) -> object:
            return fn(ctx, *args, **kwargs)

        window = client.resolve_window(
            occurrences.cron,
            occurrences.tz,
            occurrences.key,
            early_tolerance=occurrences.early_tolerance,
        )
        return run_once(
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
