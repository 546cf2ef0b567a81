"""`tenure run` as a real process against the real service: it keeps the lease while the command
runs past the TTL, exports the run's facts, skips with its documented codes, fits its grace to the
TTL and resolves its window. Stopping the command: test_cli_run_stops.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tenure import LeaseHeld, Tenure, resolve_window, run_once
from tenure._supervisor import EXIT_COMPLETED, EXIT_HELD, EXIT_UNREACHABLE
from tests.client.run_commands import PYTHON, SKEW, child, recent_daily_schedule, wait_for
from tests.support.processes import Processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

SKEWED_TENURE = Path(__file__).with_name("skewed_tenure.py")


def test_run_keeps_the_lease_past_the_ttl_and_exports_the_run(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """A command running 2.5× the TTL keeps the lease (nobody else gets it), sees the TENURE_*
    variables, and its window is completed when it exits 0."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "close-day", "--ttl", "1", "--window", "2026-09-24", "--url", service_url,
        "--", *child(out, sleep=2.5),
    )  # fmt: skip
    facts = wait_for(out)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with pytest.raises(LeaseHeld):
            client.acquire("close-day", 1)
        time.sleep(0.25)
    _, err = run.communicate(timeout=20)
    assert run.returncode == 0, err
    assert facts["env"] == {
        "TENURE_JOB": "close-day",
        "TENURE_LEASE": "close-day",
        "TENURE_WINDOW": "2026-09-24",
        "TENURE_GENERATION": "1",
        "TENURE_ATTEMPT": "1",
        "TENURE_IDEMPOTENCY_KEY": "close-day/2026-09-24",
        "TENURE_FENCING_TOKEN": "close-day/1",
    }
    assert client.get_window("close-day", "2026-09-24").completed
    assert not client.get_lease("close-day").held


def test_run_skips_with_its_codes_when_held_or_completed(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """Held: exit 111 and the command does not run; completed: 112; --skip-ok makes both 0."""
    out = tmp_path / "child.json"
    base = ("run", "job", "--window", "w", "--url", service_url)
    lease = client.acquire("job", 30)
    held = processes.tenure(*base, "--", *child(out))
    assert held.wait(20) == EXIT_HELD
    assert processes.tenure(*base, "--skip-ok", "--", *child(out)).wait(20) == 0
    assert not out.exists()
    client.release(lease)
    assert processes.tenure(*base, "--", *child(out)).wait(20) == 0
    assert out.exists()
    assert processes.tenure(*base, "--", *child(out)).wait(20) == EXIT_COMPLETED
    assert processes.tenure(*base, "--skip-ok", "--", *child(out)).wait(20) == 0


def test_run_warns_only_about_an_explicit_grace_it_cuts(
    processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """The default --grace fits any TTL without a word; an explicit one too long for the TTL is
    cut with a warning."""
    base = ("run", "job", "--ttl", "3", "--window", "w", "--url", service_url)
    quiet = processes.tenure(*base, "--", *child(tmp_path / "a.json"))
    _, err = quiet.communicate(timeout=20)
    assert quiet.returncode == 0, err
    assert "grace" not in err
    cut = processes.tenure(*base, "--grace", "10", "--", *child(tmp_path / "b.json"))
    _, err = cut.communicate(timeout=20)
    assert cut.returncode == EXIT_COMPLETED, err
    assert "--grace 10 s is cut to 0.95 s" in err


def test_run_failures_keep_the_window_open(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """A failing command's status passes through (window resumable); a missing one is 127."""
    out = tmp_path / "child.json"
    base = ("run", "job", "--window", "w", "--url", service_url)
    assert processes.tenure(*base, "--", *child(out, code=5)).wait(20) == 5
    assert client.get_window("job", "w").attempt == 1
    assert not client.get_window("job", "w").completed
    assert processes.tenure(*base, "--", str(tmp_path / "no-such-command")).wait(20) == 127
    assert processes.tenure(*base, "--", *child(out)).wait(20) == 0
    assert client.get_window("job", "w").attempt == 3


def test_run_exits_114_when_the_service_is_unreachable(
    processes: Processes, dead_url: str, tmp_path: Path
) -> None:
    """Nothing listening at the URL: exit 114, and the command never runs."""
    out = tmp_path / "child.json"
    run = processes.tenure("run", "job", "--window", "w", "--url", dead_url, "--", *child(out))
    assert run.wait(30) == EXIT_UNREACHABLE
    assert not out.exists()


def test_run_computes_the_window_from_the_schedule(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """With --cron/--tz/--key the window is the occurrence the schedule meant, as the SDK says."""
    out = tmp_path / "child.json"
    before = resolve_window("5 0 * * *", "America/Sao_Paulo", "previous_day")
    run = processes.tenure(
        "run", "close-day", "--cron", "5 0 * * *", "--tz", "America/Sao_Paulo",
        "--key", "previous_day", "--url", service_url, "--", *child(out),
    )  # fmt: skip
    assert run.wait(20) == 0
    after = resolve_window("5 0 * * *", "America/Sao_Paulo", "previous_day")
    env = wait_for(out)["env"]
    assert isinstance(env, dict)
    assert env["TENURE_WINDOW"] in {before, after}
    assert client.get_window("close-day", env["TENURE_WINDOW"]).completed


@pytest.mark.timeout(90)
def test_run_resolves_the_window_by_the_database_clock(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """`tenure run --cron` on a host whose clock runs 5 minutes behind runs today's window by the
    database's clock; yesterday's, already completed, does not make it skip."""
    cron, today, yesterday = recent_daily_schedule()
    assert run_once(client, "close-day", yesterday, lambda ctx: None).ran
    out = tmp_path / "child.json"
    run = processes.start(
        PYTHON, str(SKEWED_TENURE), str(SKEW.total_seconds()), "run", "close-day",
        "--cron", cron, "--tz", "UTC", "--key", "date", "--url", service_url,
        "--", *child(out),
    )  # fmt: skip
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    env = wait_for(out)["env"]
    assert isinstance(env, dict)
    assert env["TENURE_WINDOW"] == today
    assert client.get_window("close-day", today).completed


def test_run_refuses_bad_usage(processes: Processes, tmp_path: Path) -> None:
    """Missing command, --cron without --tz, or a bad zone: exit 2 before contacting anyone."""
    for arguments in (
        ("run", "job", "--window", "w"),
        ("run", "job", "--cron", "5 0 * * *", "--", "true"),
        ("run", "job", "--cron", "5 0 * * *", "--tz", "Mars/Olympus", "--", "true"),
    ):
        run = processes.tenure(*arguments)
        _, err = run.communicate(timeout=20)
        assert run.returncode == 2, err
        assert "tenure run: error" in err
