"""`tenure run` stops the command, and everything it started, in time: before the lease can be
granted again when renewals stall, at once when the lease is lost, after its grace when an
operator stops it; and leaves no descendant running when the run is over."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tenure import LeaseHeld, Tenure
from tenure._supervisor import EXIT_LOST
from tests.client.run_commands import DeathWatch, alive, child, escaping, running, wait_for
from tests.support.live_service import Proxy
from tests.support.processes import Processes, children

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


@pytest.fixture
def escapees() -> Iterator[list[int]]:
    """Pids a test's command may leave behind: killed after the test if they are."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_run_kills_the_command_before_the_lease_can_be_granted_again(
    client: Tenure, processes: Processes, proxy: Proxy, tmp_path: Path
) -> None:
    """Renewals stall (the link to the service swallows every byte): the command, which ignores
    SIGTERM, is dead before another holder's waiting acquire is granted the lease, by the
    database's clock; exit 113 and the window stays open."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--ttl", "2", "--grace", "0.5", "--window", "w", "--url", proxy.url,
        "--", *child(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    death = DeathWatch(int(str(wait_for(out)["pid"])))
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
        "--", *child(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    pid = int(str(wait_for(out)["pid"]))
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
    assert alive(pid)  # the command kept running while its supervisor was paused
    resumed = time.monotonic()
    run.send_signal(signal.SIGCONT)
    _, err = run.communicate(timeout=20)
    assert run.returncode == EXIT_LOST, err
    assert time.monotonic() - resumed < 0.5
    assert "lease lost" in err
    assert not alive(pid)
    assert not client.get_window("job", "w").completed
    assert client.get_lease("job").holder == client.holder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
def test_run_kills_the_command_and_its_escaped_grandchild_at_once_on_a_lease_lost_answer(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path, escapees: list[int]
) -> None:
    """An operator force-releases the lease: the next holder may take it at once, so the command
    (ignoring SIGTERM, with --grace 8) and the grandchild it started with `setsid` are killed as
    soon as a renewal hears `lease-lost`, not --grace later; exit 113, window open."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--ttl", "30", "--renew-every", "0.2", "--grace", "8", "--window", "w",
        "--url", service_url, "--", *escaping(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    facts = wait_for(out)
    pid, grandchild = int(str(facts["pid"])), int(str(facts["grandchild"]))
    escapees.append(grandchild)
    death = DeathWatch(pid)
    forced = httpx.post(f"{service_url}/v1/leases/job/force-release")
    assert forced.status_code == 200, forced.text
    released = time.time()
    assert client.acquire("job", 30).generation == 3  # the next holder needs no wait
    assert death.wait() - released < 2.0
    _, err = run.communicate(timeout=20)
    assert run.returncode == EXIT_LOST, err
    assert "lease lost" in err
    assert not running(grandchild)
    assert not client.get_window("job", "w").completed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
def test_run_leaves_no_descendant_behind_when_the_command_succeeds(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path, escapees: list[int]
) -> None:
    """A command that exits 0 leaving a `setsid` grandchild behind: by the time `tenure run`
    exits, and before the window is completed, the grandchild is gone; exit 0."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--window", "w", "--url", service_url, "--", *escaping(out),
    )  # fmt: skip
    facts = wait_for(out)
    grandchild = int(str(facts["grandchild"]))
    escapees.append(grandchild)
    assert run.wait(20) == 0
    assert not running(grandchild)  # (alive, it would also hold `run`'s output pipes open)
    assert client.get_window("job", "w").completed


def test_run_forwards_sigterm_and_exits_with_the_command_status(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """SIGTERM sent to `tenure run` reaches the command; its status is returned; no completion."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--window", "w", "--url", service_url,
        "--", *child(out, sleep=60, code=7, on_term="record"),
    )  # fmt: skip
    wait_for(out)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=20)
    assert run.returncode == 7, err
    assert (tmp_path / "child.json.term").read_text() == "TERM"
    window = client.get_window("job", "w")
    assert not window.completed
    assert not client.get_lease("job").held


def test_run_gives_a_command_stopped_by_the_operator_its_grace_then_kills_it(
    client: Tenure, processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """SIGTERM to `tenure run`: a command that ignores it keeps its --grace (the lease is still
    held: no rush), then gets SIGKILL, so that nothing is left running; 137, window open."""
    out = tmp_path / "child.json"
    run = processes.tenure(
        "run", "job", "--grace", "1", "--window", "w", "--url", service_url,
        "--", *child(out, sleep=60, on_term="ignore"),
    )  # fmt: skip
    death = DeathWatch(int(str(wait_for(out)["pid"])))
    run.send_signal(signal.SIGTERM)
    stopped = time.time()
    assert 0.9 < death.wait() - stopped < 5
    _, err = run.communicate(timeout=20)
    assert run.returncode == 128 + signal.SIGKILL, err
    assert not client.get_window("job", "w").completed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
def test_run_reaps_the_descendants_handed_to_it_while_the_command_runs(
    processes: Processes, service_url: str, tmp_path: Path
) -> None:
    """Orphans handed up to `tenure run` (the subreaper) that end during a long run are reaped
    then, not left as zombies until the run ends."""
    out = tmp_path / "started"
    script = f"(true &); (true &); (true &); touch {out}; sleep 60"
    run = processes.tenure(
        "run", "job", "--window", "w", "--url", service_url, "--", "sh", "-c", script
    )
    deadline = time.monotonic() + 15
    while not out.exists() or len(children(run.pid)) > 1:  # more than the command
        assert time.monotonic() < deadline, "zombies of tenure run were never reaped"
        time.sleep(0.05)
    run.send_signal(signal.SIGTERM)
    assert run.wait(20) == 128 + signal.SIGTERM
