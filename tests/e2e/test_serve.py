"""The README's promises, with real processes: one command serves, and the curl cycle works."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenure import MAX_GENERATION
from tests.support.processes import TENURE, tenure_service

README = Path(__file__).resolve().parents[2] / "README.md"
pytestmark = pytest.mark.slow


def readme_curl_cycle() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## A full cycle with curl", 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert match, "README lost its curl block"
    return match.group(1)


def pasted(script: str) -> tuple[list[dict[str, Any]], str]:
    """Run the block as a terminal would (no `set -e`): the answers it printed, one JSON object
    a line, and what it wrote to stderr."""
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()], done.stderr


def test_the_readme_curl_cycle_works_as_printed_and_pasted_twice() -> None:
    """`tenure serve` with no database URL starts an embedded PostgreSQL; the README's acquire →
    claim → verify → complete → release cycle answers as the README says, and pasted again it
    takes generation 2, is refused the completed window, skips the work and still releases."""
    script = readme_curl_cycle()
    assert "T=http://127.0.0.1:8080\n" in script
    with tenure_service() as service:
        url = service.url
        script = script.replace("T=http://127.0.0.1:8080", f"T={url}")
        first, errors = pasted(script)
        assert errors == ""
        assert [first[0]["generation"], first[0]["held"]] == [1, True]
        assert (first[1]["status"], first[2]["highest"], first[3]["status"]) == (
            "running",
            1,
            "completed",
        )
        assert [first[4]["generation"], first[4]["held"], len(first)] == [1, False, 5]
        second, errors = pasted(script)
        assert errors.startswith("curl: (22)")  # the claim's refusal, shown
        assert [second[0]["generation"], second[0]["held"]] == [2, True]
        assert second[1]["type"] == "/problems/window-completed"
        assert [second[2]["generation"], second[2]["held"], len(second)] == [2, False, 3]
        assert httpx.get(f"{url}/v1/leases/close-day", timeout=5).json()["held"] is False
        docs = httpx.get(f"{url}/docs", timeout=5)
        assert docs.status_code == 200


def test_two_workers_share_one_embedded_database() -> None:
    """With --workers 2 both processes serve the same leases (one embedded server)."""
    with tenure_service("--workers", "2") as service:
        url = service.url
        statuses = [
            httpx.post(
                f"{url}/v1/leases/shared/acquire",
                json={"holder": f"h{i}", "ttl_seconds": 30},
                timeout=5,
            ).status_code
            for i in range(10)
        ]
        assert statuses.count(200) == 1
        assert statuses.count(409) == 9


def test_a_waiter_that_disconnects_leaves_no_orphan_acquisition() -> None:
    """A client that gives up while waiting never ends up holding the lease it left behind."""
    with tenure_service() as service:
        url = service.url
        lease = f"{url}/v1/leases/close-day"
        first = httpx.post(f"{lease}/acquire", json={"holder": "a", "ttl_seconds": 60}, timeout=5)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                f"{lease}/acquire",
                json={"holder": "gone", "ttl_seconds": 60, "wait_seconds": 20},
                timeout=0.5,
            )
        holding = {"holder": "a", "generation": 1, "grant": first.json()["grant"]}
        released = httpx.post(f"{lease}/release", json=holding, timeout=5)
        assert released.status_code == 200, released.text
        time.sleep(0.5)
        current = httpx.get(lease, timeout=5).json()
        assert not (current["holder"] == "gone" and current["held"])
        taken = httpx.post(f"{lease}/acquire", json={"holder": "c", "ttl_seconds": 60}, timeout=5)
        assert taken.status_code == 200, taken.text


def test_admin_bump_generations_from_the_command_line(database_url: str) -> None:
    """`tenure admin bump-generations --by N` runs against TENURE_DATABASE_URL and says what
    it changed; a bad amount, or one that would pass MAX_GENERATION, exits with a message, not a
    traceback."""
    env = {"TENURE_DATABASE_URL": database_url, "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(
        [str(TENURE), "admin", "bump-generations", "--by", "10"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "bumped 0 leases by 10" in done.stdout
    refused = subprocess.run(
        [str(TENURE), "admin", "bump-generations", "--by", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert "--by must be between" in refused.stderr
    assert "Traceback" not in refused.stderr
    past = subprocess.run(
        [str(TENURE), "admin", "bump-generations", "--by", str(MAX_GENERATION)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert past.returncode != 0
    assert f"past {MAX_GENERATION}" in past.stderr
    assert f"--by may be at most {MAX_GENERATION - 10}" in past.stderr
    assert "Traceback" not in past.stderr
