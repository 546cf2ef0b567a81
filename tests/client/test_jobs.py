"""Jobs from the SDK and the CLI, against the real service: put/get/list/delete, registration on
first use by run_once, once_per and `tenure run --register`, and `tenure status`."""

from __future__ import annotations

import sys

import pytest

from tenure import (
    AsyncTenure,
    JobNotFound,
    JobSpec,
    RunContext,
    Tenure,
    once_per,
    resolve_window,
    run_once,
)
from tests.support.processes import Processes

DAILY = JobSpec(schedule="5 0 * * *", timezone="America/Sao_Paulo", key="previous_day")


def test_put_get_list_delete(client: Tenure) -> None:
    """The SDK registers, reads, lists and deletes jobs; a deleted job is JobNotFound."""
    job = client.put_job("close-day", DAILY)
    assert (job.name, job.spec.lease, job.status.status) == ("close-day", "close-day", "new")
    assert client.get_job("close-day").spec.schedule == "5 0 * * *"
    assert [item.name for item in client.list_jobs().items] == ["close-day"]
    client.delete_job("close-day")
    with pytest.raises(JobNotFound):
        client.get_job("close-day")
    with pytest.raises(JobNotFound):
        client.delete_job("close-day")


def test_run_once_registers_its_job_on_first_use(client: Tenure) -> None:
    """run_once(register=...) registers the job once per client, then runs as usual."""
    spec = JobSpec(schedule="* * * * *", timezone="UTC", deadline_seconds=600)
    window = resolve_window("* * * * *", "UTC")
    first = run_once(client, "tick", window, lambda ctx: ctx.attempt, register=spec)
    again = run_once(client, "tick", window, lambda ctx: ctx.attempt, register=spec)
    assert first.ran
    assert not again.ran
    job = client.get_job("tick")
    assert job.status.last_completed_window == window
    events = client.overview()
    assert [item.name for item in events.jobs] == ["tick"]


async def test_once_per_registers_with_its_schedule(service_url: str) -> None:
    """once_per(register=True) registers the decorated job with its cron, zone and key."""
    async with AsyncTenure(service_url) as client:

        @once_per("hourly", cron="0 * * * *", tz="Europe/Lisbon", client=client, register=True)
        async def hourly(ctx: RunContext) -> str:
            return ctx.window

        result = await hourly()
        assert result.ran
        job = await client.get_job("hourly")
        assert (job.spec.schedule, job.spec.timezone, job.spec.key) == (
            "0 * * * *",
            "Europe/Lisbon",
            "occurrence",
        )
        assert job.status.last_completed_window == result.window


@pytest.mark.slow
def test_cli_run_register_and_status(
    service_url: str, client: Tenure, processes: Processes
) -> None:
    """`tenure run --register` registers the job before running; `tenure status` prints the
    job, its status and the lease as tables."""
    run = processes.tenure(
        "run", "report", "--cron", "*/5 * * * *", "--tz", "UTC", "--register",
        "--deadline", "900", "--url", service_url, "--", sys.executable, "-c", "pass",
    )  # fmt: skip
    assert run.wait(30) == 0, run.stderr.read() if run.stderr else ""
    job = client.get_job("report")
    assert job.spec.deadline_seconds == 900
    client.acquire("report-lock", 60)
    status = processes.tenure("status", "--url", service_url)
    assert status.wait(30) == 0
    output = status.stdout.read() if status.stdout else ""
    assert "JOBS" in output
    assert "LEASES" in output
    jobs, leases = output.split("\nLEASES\n")[0], output.split("\nLEASES\n")[1]
    (line,) = [line for line in jobs.splitlines() if line.startswith("report ")]
    assert "ok" in line.split()
    assert "*/5 * * * * (UTC)" in line
    (held,) = [line for line in leases.splitlines() if line.startswith("report-lock ")]
    assert "held" in held.split()


def test_cli_status_without_a_service_exits_114(dead_url: str, processes: Processes) -> None:
    """`tenure status` against nothing says so and exits 114 (unreachable)."""
    status = processes.tenure("status", "--url", dead_url)
    assert status.wait(30) == 114
