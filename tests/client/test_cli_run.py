"""`tenure run` as a real process against the real service: it keeps the lease while the command
runs past the TTL, exports the run's facts, skips with its documented codes, stops the command
when the lease is lost, and forwards signals."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tenure import LeaseHeld, Tenure, resolve_window, run_once
from tenure._supervisor import EXIT_COMPLETED, EXIT_HELD, EXIT_LOST, EXIT_UNREACHABLE
from tests.client.conftest import SKEW, Processes, Proxy, recent_daily_schedule

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

PYTHON = sys.executable
SKEWED_TENURE = Path(__file__).with_name("skewed_tenure.py")
# The command the tests run: writes its pid and TENURE_* environment to a file, optionally
# ignores SIGTERM or records it, then sleeps; exits with the given status.
CHILD = """
import json, os, signal, sys, time
out, sleep, code, on_term = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def term(signum, frame):
    with open(out + ".term", "w") as f:
        f.write("TERM")
    sys.exit(code)
if on_term == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif on_term == "record":
    signal.signal(signal.SIGTERM, term)
env = {k: v for k, v in os.environ.items() if k.startswith("TENURE_")}
with open(out + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "env": env}, f)
os.rename(out + ".tmp", out)
time.sleep(sleep)
sys.exit(code)
"""


def _child(out: Path, sleep: float = 0.0, code: int = 0, on_term: str = "default") -> list[str]:
    return [PYTHON, "-c", CHILD, str(out), str(sleep), str(code), on_term]


def _wait_for(path: Path, timeout: float = 15.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    facts: dict[str, object] = json.loads(path.read_text())
    return facts


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class DeathWatch:
    """The wall-clock time a process (not a child of this one) ended, seen through a pidfd: it
    turns readable when the process terminates, before anyone reaps it."""

    def __init__(self, pid: int) -> None:
        self._pidfd = os.pidfd_open(pid)
        self.died_at: float | None = None
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        readable, _, _ = select.select([self._pidfd], [], [], 30)
        if readable:
            self.died_at = time.time()
        os.close(self._pidfd)

    def wait(self) -> float:
        self._thread.join(35)
        assert self.died_at is not None, "the process did not end"
        return self.died_at


def test_run_keeps_the_lease_past_the_ttl_and_exports_the_run(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """A command running 2.5× the TTL keeps the lease (nobody else gets it), sees the TENURE_*
    variables, and its window is completed when it exits 0."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "close-day", "--ttl", "1", "--window", "2026-09-24", "--url", service_url,
        "--", *_child(out, sleep=2.5),
    )  # fmt: skip
    facts = _wait_for(out)
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
    held = processes.tenure(*base, "--", *_child(out))
    assert held.wait(20) == EXIT_HELD
    assert processes.tenure(*base, "--skip-ok", "--", *_child(out)).wait(20) == 0
    assert not out.exists()
    client.release(lease)
    assert processes.tenure(*base, "--", *_child(out)).wait(20) == 0
    assert out.exists()
    assert processes.tenure(*base, "--", *_child(out)).wait(20) == EXIT_COMPLETED
    assert processes.tenure(*base, "--skip-ok", "--", *_child(out)).wait(20) == 0


def test_run_kills_the_command_before_the_lease_can_be_granted_again(
    client: Tenure, processes: Processes, proxy: Proxy, tmp_path: Path
) -> None:
    """Renewals stall (the link to the service swallows every byte): the command, which ignores
    SIGTERM, is dead before another holder's waiting acquire is granted the lease, by the
    database's clock; exit 113 and the window stays open."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--ttl", "2", "--grace", "0.5", "--window", "w", "--url", proxy.url,
        "--", *_child(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    death = DeathWatch(int(str(_wait_for(out)["pid"])))
    proxy.blackhole()
    taken = client.acquire("job", 30, wait=15)
    died_at = death.wait()
    assert died_at < taken.acquired_at.timestamp(), (died_at, taken.acquired_at)
    _, err = run.communicate(timeout=30)
    assert run.returncode == EXIT_LOST, err
    assert not client.get_window("job", "w").completed


def test_run_stops_the_command_when_the_lease_is_lost(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """`tenure run` paused (SIGSTOP) past its TTL while another holder takes over notices the loss
    when it resumes, past the deadline: SIGKILL at once (no --grace: SIGTERM is ignored here and
    the lease is gone), exit 113, window open."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--ttl", "1", "--grace", "0.5", "--window", "w", "--url", service_url,
        "--", *_child(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    child = int(str(_wait_for(out)["pid"]))
    run.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while True:
        try:
            taken = client.acquire("job", 30)
            break
        except LeaseHeld:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert taken.generation == 2
    assert _alive(child)  # the command kept running while its supervisor was paused
    resumed = time.monotonic()
    run.send_signal(signal.SIGCONT)
    _, err = run.communicate(timeout=20)
    assert run.returncode == EXIT_LOST, err
    assert time.monotonic() - resumed < 0.5
    assert "lease lost" in err
    assert not _alive(child)
    assert not client.get_window("job", "w").completed
    assert client.get_lease("job").holder == client.holder


def test_run_forwards_sigterm_and_exits_with_the_command_status(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """SIGTERM sent to `tenure run` reaches the command; its status is returned; no completion."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--window", "w", "--url", service_url,
        "--", *_child(out, sleep=60, code=7, on_term="record"),
    )  # fmt: skip
    _wait_for(out)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=20)
    assert run.returncode == 7, err
    assert (tmp_path / "child.json.term").read_text() == "TERM"
    window = client.get_window("job", "w")
    assert not window.completed
    assert not client.get_lease("job").held


def test_run_failures_keep_the_window_open(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """A failing command's status passes through (window resumable); a missing one is 127."""
    out = tmp_path / "child.json"
    base = ("run", "job", "--window", "w", "--url", service_url)
    assert processes.tenure(*base, "--", *_child(out, code=5)).wait(20) == 5
    assert client.get_window("job", "w").attempt == 1
    assert not client.get_window("job", "w").completed
    assert processes.tenure(*base, "--", str(tmp_path / "no-such-command")).wait(20) == 127
    assert processes.tenure(*base, "--", *_child(out)).wait(20) == 0
    assert client.get_window("job", "w").attempt == 3


def test_run_exits_114_when_the_service_is_unreachable(
    processes: Processes, dead_url: str, tmp_path: Path
) -> None:
    """Nothing listening at the URL: exit 114, and the command never runs."""
    out = tmp_path / "child.json"
    run = processes.tenure("run", "job", "--window", "w", "--url", dead_url, "--", *_child(out))
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
        "--key", "previous_day", "--url", service_url, "--", *_child(out),
    )  # fmt: skip
    assert run.wait(20) == 0
    after = resolve_window("5 0 * * *", "America/Sao_Paulo", "previous_day")
    env = _wait_for(out)["env"]
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
        "--", *_child(out),
    )  # fmt: skip
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    env = _wait_for(out)["env"]
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
