"""`run_once`, `arun_once` and `once_per` against the real service: one run per window across
processes, skips for held and completed windows, resumption after a failure, and the window
computed from the schedule the scheduler meant."""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tenure import (
    AsyncTenure,
    LeaseHeld,
    RunContext,
    RunResult,
    Tenure,
    arun_once,
    once_per,
    run_once,
)
from tests.client.run_commands import WORKER, recent_daily_schedule
from tests.support.live_service import StartService
from tests.support.processes import Processes


def test_a_completed_window_is_skipped(client: Tenure) -> None:
    """The second run of a completed window does not call fn and says `completed`."""
    calls: list[RunContext] = []

    def work(ctx: RunContext) -> str:
        calls.append(ctx)
        return "done"

    first = run_once(client, "close-day", "2026-09-24", work)
    assert (first.ran, first.skipped, first.attempt, first.value) == (True, None, 1, "done")
    assert first.generation == 1
    second = run_once(client, "close-day", "2026-09-24", work)
    assert (second.ran, second.skipped, second.value) == (False, "completed", None)
    assert len(calls) == 1
    assert not client.get_lease("close-day").held  # released after each run


def test_a_failed_run_is_resumed_by_the_next_one(client: Tenure) -> None:
    """fn raising leaves the window uncompleted; the next run resumes it as attempt 2."""
    attempts: list[int] = []

    def fail(ctx: RunContext) -> None:
        attempts.append(ctx.attempt)
        raise RuntimeError("store 42 is down")

    with pytest.raises(RuntimeError, match="store 42"):
        run_once(client, "close-day", "2026-09-24", fail)
    assert not client.get_window("close-day", "2026-09-24").completed
    assert not client.get_lease("close-day").held
    result = run_once(client, "close-day", "2026-09-24", lambda ctx: attempts.append(ctx.attempt))
    assert (result.ran, result.attempt) == (True, 2)
    assert attempts == [1, 2]
    assert client.get_window("close-day", "2026-09-24").completed


def test_a_held_lease_skips_without_error(client: Tenure, service_url: str) -> None:
    """While another holder holds the job's lease, run_once skips with `held`."""
    client.acquire("close-day", 30)
    with Tenure(service_url) as other:
        result = run_once(other, "close-day", "w", lambda ctx: pytest.fail("must not run"))
    assert (result.ran, result.skipped) == (False, "held")


def test_context_names_the_occurrence_and_carries_the_fencing_token(client: Tenure) -> None:
    """ctx has the window, attempt, generation, fencing headers and an idempotency key."""

    def work(ctx: RunContext) -> dict[str, object]:
        ctx.check()
        return {
            "key": ctx.idempotency_key("store", 42),
            "headers": ctx.fencing_headers(),
            "lease": ctx.lease,
            "lost": ctx.lost,
            "fence": client.verify_fence("ledger", ctx.lease, ctx.generation).highest,
        }

    result = run_once(client, "close-day", "2026-09-25", work, lease="close-day-lock")
    assert result.value == {
        "key": "close-day/2026-09-25/store/42",
        "headers": {"Fencing-Token": "close-day-lock/1"},
        "lease": "close-day-lock",
        "lost": False,
        "fence": 1,
    }


async def test_arun_once_runs_skips_and_resumes(service_url: str) -> None:
    """The async executor has the same outcomes: ran, completed-skip, resumed attempt."""
    async with AsyncTenure(service_url) as client:

        async def fail(ctx: RunContext) -> None:
            raise ValueError(ctx.attempt)

        async def work(ctx: RunContext) -> int:
            return ctx.attempt

        with pytest.raises(ValueError, match="1"):
            await arun_once(client, "job", "w", fail)
        first = await arun_once(client, "job", "w", work, ttl=5)
        assert (first.ran, first.value) == (True, 2)
        again = await arun_once(client, "job", "w", work)
        assert again.skipped == "completed"


def test_once_per_counts_a_scheduler_firing_early_for_its_occurrence(
    start_service: StartService,
) -> None:
    """A scheduler firing within `early_tolerance` before the occurrence (by the database's
    clock, on a service allowing that much) runs that occurrence, not the one before; called
    again, it skips it."""
    due = (datetime.now(UTC) + timedelta(minutes=2)).replace(second=0, microsecond=0)
    service = start_service(max_early_tolerance_seconds=300)
    with Tenure(service.url) as client:

        @once_per(
            "close-day",
            cron=f"{due.minute} {due.hour} * * *",
            tz="UTC",
            key="date",
            client=client,
            early_tolerance=180,
        )
        def close_day(ctx: RunContext, store: int) -> int:
            return store

        first: RunResult[int] = close_day(42)
        assert (first.ran, first.window, first.value) == (True, due.date().isoformat(), 42)
        again = close_day(7)
        assert (again.ran, again.skipped, again.window) == (False, "completed", first.window)


async def test_once_per_with_an_async_client_resolves_by_the_database_clock(
    service_url: str,
) -> None:
    """With an AsyncTenure client the decorated coroutine function is awaited, and its window
    is the service's current one: yesterday's, already completed, does not make it skip."""
    cron, today, yesterday = recent_daily_schedule()
    async with AsyncTenure(service_url) as client:

        async def work(ctx: RunContext) -> None:
            pass

        assert (await arun_once(client, "close-day", yesterday, work)).ran

        @once_per("close-day", cron=cron, tz="UTC", key="date", client=client)
        async def close_day(ctx: RunContext) -> str:
            return ctx.window

        result = await close_day()
        assert (result.ran, result.window) == (True, today)


def test_once_per_refuses_a_bad_schedule(client: Tenure) -> None:
    """A cron expression or time zone that cannot work is refused at decoration time."""
    with pytest.raises(ValueError, match="cron"):
        once_per("job", cron="61 * * * *", tz="UTC", client=client)
    with pytest.raises(ValueError, match="time zone"):
        once_per("job", cron="5 0 * * *", tz="Mars/Olympus", client=client)


async def test_once_per_refuses_a_function_of_the_wrong_kind(client: Tenure) -> None:
    """A coroutine function with a sync client (or the reverse) is refused when decorated."""

    async def job(ctx: RunContext) -> None:
        pass  # pragma: no cover

    with pytest.raises(TypeError, match="coroutine function"):
        once_per("job", cron="5 0 * * *", tz="UTC", client=client)(job)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_two_processes_for_one_window_run_fn_once(
    service_url: str, processes: Processes, tmp_path: Path
) -> None:
    """Two OS processes running run_once for the same job and window at once: one runs fn."""
    log = tmp_path / "runs.log"
    start_at = str(time.time() + 1.5)
    workers = [
        processes.python(
            WORKER, "run-once", service_url, "close-day", "2026-09-24", str(log), start_at, "1"
        )
        for _ in range(2)
    ]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(result["ran"] for result in results) == [False, True]
    skipped = next(result for result in results if not result["ran"])
    assert skipped["skipped"] in ("held", "completed")
    lines = log.read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].split()[2] == "1"  # attempt 1


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_killed_holder_is_replaced_within_ttl_and_one_retry_period(
    client: Tenure, processes: Processes, service_url: str
) -> None:
    """SIGKILL the holding process: another holder, retrying every TTL/3, gets the lease within
    TTL + one retry period, with the next generation."""
    ttl, retry_period = 1.0, 1.0 / 3
    holder = processes.python(WORKER, "hold", service_url, "job", str(ttl))
    assert holder.stdout is not None
    held = json.loads(holder.stdout.readline())
    time.sleep(2 * ttl)  # it renews: still held after two TTLs
    with pytest.raises(LeaseHeld):
        client.acquire("job", ttl)
    holder.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    while True:
        try:
            lease = client.acquire("job", ttl)
            break
        except LeaseHeld:
            time.sleep(retry_period)
    elapsed = time.monotonic() - killed
    assert lease.generation == held["generation"] + 1
    assert elapsed <= ttl + retry_period + 0.25
