"""Structured logs: one record per lease transition, window claim/completion and fence
rejection, with its facts as fields, and one per request with its latency."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tenure_server.server.logs import JsonFormatter
from tests.api.test_leases import held
from tests.api.test_metrics import expire


def events(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    formatter = JsonFormatter()
    return [
        json.loads(formatter.format(record))
        for record in caplog.records
        if record.name in ("tenure.events", "tenure.http")
    ]


async def test_transitions_and_requests_are_logged_as_json_events(
    api: httpx.AsyncClient, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A takeover names the previous holder and generation; a fence rejection and a refused
    acquire are logged; each request has its route and latency."""
    caplog.set_level(logging.DEBUG)
    await held(api, "close-day", "a")
    await api.post("/v1/leases/close-day/acquire", json={"holder": "b", "ttl_seconds": 5})
    await expire(database_url, "close-day")
    await held(api, "close-day", "b")
    await api.post("/v1/fences/ledger/verify", json={"lease": "close-day", "generation": 2})
    await api.post("/v1/fences/ledger/verify", json={"lease": "close-day", "generation": 1})
    logged = events(caplog)
    names = [entry["event"] for entry in logged if entry["logger"] == "tenure.events"]
    assert names == [
        "lease.acquired",
        "lease.refused",
        "lease.taken_over",
        "fence.accepted",
        "fence.rejected",
    ]
    (takeover,) = [entry for entry in logged if entry["event"] == "lease.taken_over"]
    assert takeover["level"] == "warning"
    assert (takeover["holder"], takeover["generation"]) == ("b", 2)
    assert (takeover["previous_holder"], takeover["previous_generation"]) == ("a", 1)
    (rejected,) = [entry for entry in logged if entry["event"] == "fence.rejected"]
    assert (rejected["rejection"], rejected["highest"]) == ("stale_generation", 2)
    requests = [entry for entry in logged if entry["event"] == "http.request"]
    assert len(requests) == 5
    assert requests[1]["route"] == "/v1/leases/{name}/acquire"
    assert requests[1]["status"] == 409
    assert isinstance(requests[1]["duration_ms"], float)


async def test_routine_successes_are_debug_and_refusals_stay_visible_at_info(
    api: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """At the default level a granted acquire or an accepted fence writes no line (it is in the
    metrics and lease_events); a refused acquire and its 409 answer do."""
    caplog.set_level(logging.INFO)
    await held(api, "close-day", "a")
    await api.post("/v1/fences/ledger/verify", json={"lease": "close-day", "generation": 1})
    await api.post("/v1/leases/close-day/acquire", json={"holder": "b", "ttl_seconds": 5})
    logged = [(entry["event"], entry.get("status")) for entry in events(caplog)]
    assert logged == [("lease.refused", None), ("http.request", 409)]
