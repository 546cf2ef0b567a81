"""/metrics under several uvicorn workers: every scrape shows the whole replica's counters,
whichever worker answers, and the logs are JSON lines."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import tenure_service

LEASES = 8
SCRAPES = 8


def acquisitions(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "tenure_lease_acquisitions_total"
    )


@pytest.mark.slow
def test_counters_are_summed_over_workers(database_url: str) -> None:
    """With two workers, acquisitions answered by either worker all show in every scrape."""
    with (
        # No monitor: its own acquire of tenure.monitor (after 15 s) would be counted too.
        tenure_service(
            "--workers", "2", database_url=database_url, TENURE_MONITOR_ENABLED="false"
        ) as service,
        httpx.Client(base_url=service.url, timeout=10) as http,
    ):
        url = service.url
        for index in range(LEASES):
            # A new connection each time, so that the kernel spreads them over the workers.
            answer = httpx.post(
                f"{url}/v1/leases/lease-{index}/acquire",
                json={"holder": "h", "ttl_seconds": 30},
                timeout=10,
            )
            assert answer.status_code == 200, answer.text
        seen = set()
        for _ in range(SCRAPES):
            seen.add(acquisitions(httpx.get(f"{url}/metrics", timeout=10).text))
        assert seen == {float(LEASES)}
        assert http.get("/healthz").status_code == 200
