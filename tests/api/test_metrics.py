"""/metrics: Prometheus text that prometheus-client's parser reads, counters that move as the API
is used, gauges of state read from the database, and labels of bounded cardinality."""

from __future__ import annotations

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.api.test_leases import held, release
from tests.support.lifespan import Running

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(api: httpx.AsyncClient) -> Samples:
    response = await api.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def expire(database_url: str, lease: str) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = $1", lease
        )
    finally:
        await connection.close()


async def test_counters_move_as_the_api_is_used(api: httpx.AsyncClient, database_url: str) -> None:
    """Acquisitions, refusals, takeovers, lost renewals, releases, window claims and completions,
    fence accepts and rejections each count once per event, by lease or job."""
    before = await scrape(api)
    lease = await held(api, "close-day", "a")
    refused = await api.post("/v1/leases/close-day/acquire", json={"holder": "b", "ttl_seconds": 9})
    assert refused.status_code == 409
    holding = {"holder": "a", "lease": "close-day", "generation": lease["generation"]}
    await api.post("/v1/jobs/close-day/windows/2026-09-25/claim", json=holding)
    await api.post("/v1/jobs/close-day/windows/2026-09-25/complete", json=holding)
    await api.post("/v1/fences/ledger/verify", json={"lease": "close-day", "generation": 1})
    await expire(database_url, "close-day")
    taken = await held(api, "close-day", "b")
    renew = {"holder": "a", "generation": 1, "ttl_seconds": 9}
    assert (await api.post("/v1/leases/close-day/renew", json=renew)).status_code == 409
    stale = {"lease": "close-day", "generation": 1}
    await api.post("/v1/fences/ledger/verify", json={"lease": "close-day", "generation": 2})
    assert (await api.post("/v1/fences/ledger/verify", json=stale)).status_code == 409
    assert (await release(api, taken)).status_code == 200

    after = await scrape(api)
    moved = {
        name: value(after, name, **labels) - value(before, name, **labels)
        for name, labels in [
            ("tenure_lease_acquisitions_total", {"lease": "close-day"}),
            ("tenure_lease_refusals_total", {"lease": "close-day"}),
            ("tenure_lease_takeovers_total", {"lease": "close-day"}),
            ("tenure_lease_renew_refusals_total", {"lease": "close-day"}),
            ("tenure_lease_releases_total", {"lease": "close-day"}),
            ("tenure_window_claims_total", {"job": "close-day"}),
            ("tenure_window_completions_total", {"job": "close-day"}),
            ("tenure_fence_accepts_total", {"lease": "close-day"}),
            (
                "tenure_fence_rejections_total",
                {"lease": "close-day", "reason": "stale_generation"},
            ),
            ("tenure_job_run_duration_seconds_count", {"job": "close-day"}),
        ]
    }
    assert moved == {
        "tenure_lease_acquisitions_total": 2,
        "tenure_lease_refusals_total": 1,
        "tenure_lease_takeovers_total": 1,
        "tenure_lease_renew_refusals_total": 1,
        "tenure_lease_releases_total": 1,
        "tenure_window_claims_total": 1,
        "tenure_window_completions_total": 1,
        "tenure_fence_accepts_total": 2,
        "tenure_fence_rejections_total": 1,
        "tenure_job_run_duration_seconds_count": 1,
    }
    route = {"method": "POST", "route": "/v1/leases/{name}/acquire", "status": "409"}
    assert value(after, "tenure_http_request_duration_seconds_count", **route) == 1


async def test_state_gauges_come_from_the_database(api: httpx.AsyncClient) -> None:
    """Job status (one sample per status), lease age and generation are read from the database;
    no label carries a holder or a window key."""
    body = {"schedule": "5 0 * * *", "timezone": "UTC"}
    assert (await api.put("/v1/jobs/close-day", json=body)).status_code == 200
    await held(api, "close-day", "host-1:4242:secret-holder")
    samples = await scrape(api)
    assert value(samples, "tenure_database_up") == 1
    assert value(samples, "tenure_job_status", job="close-day", status="new") == 1
    assert value(samples, "tenure_job_status", job="close-day", status="missed") == 0
    assert value(samples, "tenure_lease_generation", lease="close-day") == 1
    assert value(samples, "tenure_lease_holding_age_seconds", lease="close-day") >= 0
    assert value(samples, "tenure_alerts_open", kind="missed") == 0
    labels = {key for (_, pairs) in samples for key, _ in pairs}
    assert labels <= {
        "lease",
        "job",
        "status",
        "kind",
        "reason",
        "method",
        "route",
        "le",
        "transition",
        "format",
        "result",
        "role",
        "state",
        "per",
        "direction",
    }
    assert not any("secret-holder" in value for (_, pairs) in samples for _, value in pairs)


async def test_each_monitor_pass_is_timed_by_role(app: Running, api: httpx.AsyncClient) -> None:
    """A pass leads (this app is the only replica) and is observed in
    tenure_monitor_pass_duration_seconds, beside the pass counter."""
    monitor = app.monitor
    assert await monitor.run_pass()
    samples = await scrape(api)
    timed = value(samples, "tenure_monitor_pass_duration_seconds_count", role="leader")
    assert timed == value(samples, "tenure_monitor_passes_total", role="leader") == 1
    assert value(samples, "tenure_monitor_pass_duration_seconds_sum", role="leader") > 0
