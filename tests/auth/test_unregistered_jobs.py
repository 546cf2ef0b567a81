"""Unregistered jobs are shown only in the caller's namespaces, as registered ones (issue 26)."""

from __future__ import annotations

import httpx

from tests.api.test_windows import holding
from tests.support.tokens import bearer


async def test_unregistered_jobs_are_shown_only_in_the_callers_namespaces(
    secured: httpx.AsyncClient,
) -> None:
    """A reader sees the unregistered jobs under its namespaces only, as for registered ones."""
    for principal, job in (("billing-client", "billing.adhoc"), ("ops-client", "ops.adhoc")):
        acquired = await secured.post(
            f"/v1/leases/{job}/acquire",
            json={"holder": "h", "ttl_seconds": 30},
            headers=bearer(principal),
        )
        assert acquired.status_code == 200, acquired.text
        claimed = await secured.post(
            f"/v1/jobs/{job}/windows/k/claim",
            json=holding("h", 1, job),
            headers=bearer(principal),
        )
        assert claimed.status_code == 200, claimed.text
    reader = bearer("billing-reader")
    overview = (await secured.get("/v1/overview", headers=reader)).json()
    assert [job["name"] for job in overview["unregistered_jobs"]] == ["billing.adhoc"]
    listed = await secured.get(
        "/v1/jobs", params={"unregistered": "true", "prefix": "billing."}, headers=reader
    )
    assert [job["name"] for job in listed.json()["items"]] == ["billing.adhoc"]
    refused = await secured.get("/v1/jobs", params={"unregistered": "true"}, headers=reader)
    assert refused.status_code == 403
