"""examples/daily_close.py as its docstring and the README tell a user to run it: a copy paused
after its first payout is fenced off in one line and a documented exit status, and a day that is
not a date is refused before Tenure is asked."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from examples.daily_close import FENCED_OFF, SERVICE_ERROR, iso_day

from tests.support.payments import payments_service
from tests.support.processes import Processes, free_port

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "daily_close.py"
DAY = "2026-09-26"
# The paused copy's TTL: long enough for a second copy to start while it still holds the lease.
TTL = 6.0
USAGE_ERROR = 2  # argparse's


def daily_close(processes: Processes, *arguments: str) -> subprocess.Popen[str]:
    return processes.start(sys.executable, str(EXAMPLE), *arguments)


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Its exit status, standard output and standard error, once it has ended."""
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def wait_stopped(pid: int) -> None:
    """Return once the process is stopped (state T in /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the paused copy never stopped"
        time.sleep(0.05)


def wait_expired(tenure_url: str, lease: str) -> None:
    deadline = time.monotonic() + TTL + 10
    while httpx.get(f"{tenure_url}/v1/leases/{lease}", timeout=5).json()["held"]:
        assert time.monotonic() < deadline, f"lease {lease} still held"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_paused_copy_is_fenced_off_in_one_line_with_exit_status_3(
    processes: Processes,
    tenure_url: str,
    own_database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Paused after its first payout (--pause-after-first-payout) while a second copy waits out
    its TTL and pays the day, the resumed copy prints only `fenced off: generation 1 is
    superseded by 2` and exits 3; each store is paid once, store 17 by generation 1."""
    with payments_service(own_database_url) as payments:
        monkeypatch.setenv("TENURE_URL", tenure_url)
        monkeypatch.setenv("PAYMENTS_URL", payments.url)
        paused = daily_close(processes, DAY, "--ttl", str(TTL), "--pause-after-first-payout")
        assert paused.stdout is not None
        assert paused.stdout.readline() == "store 17: 201 daily-close/1\n"
        assert f"(pid {paused.pid}) holding generation 1," in paused.stdout.readline()
        wait_stopped(paused.pid)
        assert finished(daily_close(processes, DAY)) == (0, f"{DAY}: skipped: held\n", "")
        wait_expired(tenure_url, "daily-close")
        status, out, err = finished(daily_close(processes, DAY))
        assert (status, err) == (0, ""), err
        assert out.endswith(f"{DAY}: paid 3 stores (attempt 2)\n")
        paused.send_signal(signal.SIGCONT)
        assert finished(paused) == (FENCED_OFF, "", "fenced off: generation 1 is superseded by 2\n")
        paid = httpx.get(f"{payments.url}/payouts", params={"day": DAY}, timeout=5).json()
    tokens = {payout["store"]: payout["fencing_token"] for payout in paid}
    assert tokens == {17: "daily-close/1", 42: "daily-close/2", 99: "daily-close/2"}


@pytest.mark.parametrize("day", ["2026-09-31", "2026-9-25", "yesterday", "2026-09-25T00:05"])
def test_a_day_that_is_not_a_date_is_refused_before_tenure_is_asked(
    day: str, processes: Processes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DAY that is not an ISO date exits 2 with a one-line reason and no traceback; Tenure
    (here an address nothing answers) is never asked."""
    monkeypatch.setenv("TENURE_URL", f"http://127.0.0.1:{free_port()}")
    status, out, err = finished(daily_close(processes, day))
    assert (status, out) == (USAGE_ERROR, "")
    assert err.splitlines()[-1] == (
        f"daily_close.py: error: argument day: not a date (YYYY-MM-DD): {day!r}"
    )
    assert "Traceback" not in err


def test_one_day_has_one_spelling() -> None:
    """Each ISO spelling of a day names the same window (and so the same idempotency keys)."""
    assert {iso_day(text) for text in ["2026-09-25", "20260925", "2026-W39-5"]} == {"2026-09-25"}


def test_an_unreachable_tenure_is_one_line_and_exit_status_1(
    processes: Processes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing at TENURE_URL the example says so in one line and exits 1."""
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("TENURE_URL", url)
    status, out, err = finished(daily_close(processes, DAY))
    assert (status, out) == (SERVICE_ERROR, "")
    assert err.startswith(f"cannot reach Tenure at {url}: ")
    assert len(err.splitlines()) == 1
