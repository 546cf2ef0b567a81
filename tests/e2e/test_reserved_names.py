"""`tenure serve` as a new user starts it: names under `tenure.` are the service's own, with
authentication off and with tokens, and the monitor leads again after a restart whatever a
client tries."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import httpx
import pytest

from tests.support.processes import Server, tenure_service
from tests.support.tokens import bearer, register_old_job, tokens_toml

pytestmark = pytest.mark.slow
MONITOR = "tenure.monitor"
TOKENS = tokens_toml()


def monitoring_replica(database_url: str) -> AbstractContextManager[Server]:
    """A replica whose monitor passes twice a second."""
    return tenure_service(
        database_url=database_url,
        TENURE_TOKENS=TOKENS,
        TENURE_MONITOR_INTERVAL_SECONDS="0.5",
        TENURE_MONITOR_LEASE_TTL_SECONDS="2",
    )


def until(check: Callable[[], bool], what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} in {within} s")
        time.sleep(0.1)


def held_by_the_service(url: str) -> bool:
    """`tenure.monitor` is held, and not by the squatter."""
    lease = httpx.get(f"{url}/v1/leases/{MONITOR}", headers=bearer("every-client"), timeout=5)
    return (
        lease.status_code == 200 and lease.json()["held"] and lease.json()["holder"] != "squatter"
    )


def leads(url: str) -> bool:
    """The replica at `url` has completed a monitor pass as the leader."""
    text = httpx.get(f"{url}/metrics", headers=bearer("every-client"), timeout=5).text
    return any(
        line.startswith('tenure_monitor_passes_total{role="leader"}')
        and float(line.rsplit(" ", 1)[1]) > 0
        for line in text.splitlines()
    )


def squat(url: str, stop: threading.Event, answers: list[httpx.Response]) -> None:
    """A `*` client trying to take the monitor's lease for an hour, and renew it, nonstop."""
    generation = None
    with httpx.Client(base_url=url, headers=bearer("every-client"), timeout=5) as http:
        while not stop.is_set():
            if generation is None:
                body = {"holder": "squatter", "ttl_seconds": 3600}
                answer = http.post(f"/v1/leases/{MONITOR}/acquire", json=body)
            else:
                body = {"holder": "squatter", "generation": generation, "ttl_seconds": 3600}
                answer = http.post(f"/v1/leases/{MONITOR}/renew", json=body)
            answers.append(answer)
            generation = answer.json()["generation"] if answer.status_code == 200 else None


def test_a_star_token_never_keeps_the_monitor_from_leading(database_url: str) -> None:
    """Two replicas with tokens; a client whose token covers every name hammers one of them for
    `tenure.monitor` while the other, the monitor's, restarts: every try is 403 `reserved-name`,
    and the restarted replica leads again."""
    stop = threading.Event()
    answers: list[httpx.Response] = []
    with tenure_service(
        database_url=database_url, TENURE_MONITOR_ENABLED="false", TENURE_TOKENS=TOKENS
    ) as serving:
        with monitoring_replica(database_url):
            until(lambda: held_by_the_service(serving.url), "led")
        squatter = threading.Thread(target=squat, args=(serving.url, stop, answers))
        squatter.start()
        try:
            with monitoring_replica(database_url) as monitoring:
                until(lambda: leads(monitoring.url), "led again")
                assert held_by_the_service(serving.url)
        finally:
            stop.set()
            squatter.join()
    assert answers
    assert {answer.status_code for answer in answers} == {403}
    assert {answer.json()["type"] for answer in answers} == {"/problems/reserved-name"}


def test_without_authentication_the_names_are_reserved_and_start_up_says_which_are_in_use(
    database_url: str,
) -> None:
    """With authentication off (loopback), the anonymous caller may not take `tenure.monitor`
    either; a job of the deployment's own under `tenure.` is named in a warning at start-up."""
    asyncio.run(register_old_job(database_url))
    with tempfile.TemporaryFile() as log:
        with tenure_service(database_url=database_url, output=log) as service:
            body = {"holder": "me", "ttl_seconds": 60}
            answer = httpx.post(f"{service.url}/v1/leases/{MONITOR}/acquire", json=body, timeout=5)
            assert answer.status_code == 403, answer.text
            assert answer.json()["type"] == "/problems/reserved-name"
            assert answer.json()["name"] == MONITOR
        log.seek(0)
        lines = [json.loads(line) for line in log.read().decode().splitlines() if line.strip()]
    (warning,) = [line for line in lines if "reserved to the service" in line.get("message", "")]
    assert warning["level"] == "warning"
    assert warning["jobs"] == ["tenure.nightly"]
