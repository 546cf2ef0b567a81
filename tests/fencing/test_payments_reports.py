"""The payments example told where Tenure is (`$TENURE_URL`; here --tenure-url) makes its
refusals visible there: a stale payout is a `fence.rejected` event on Tenure's stream, and the
payout is still refused and not written."""

from __future__ import annotations

import httpx
import pytest

from tenure import AsyncTenure
from tests.support.event_streams import stream
from tests.support.live_service import LiveService
from tests.support.payments import payments_service

DAY = "2026-09-25"


async def pay(payments: httpx.AsyncClient, token: str, key: str) -> httpx.Response:
    body = {"store": 17, "day": DAY, "amount_cents": 100}
    headers = {"Fencing-Token": token, "Idempotency-Key": key}
    return await payments.post("/payouts", json=body, headers=headers)


@pytest.mark.timeout(60)
async def test_a_stale_payout_is_a_fence_rejection_on_tenures_stream(
    service: LiveService, own_database_url: str
) -> None:
    """Generation 2 of `daily-close` paid; a payout from generation 1 is refused with 409
    stale-generation, not written, and Tenure streams it: resource `payouts`, the lease, the
    refused generation and the highest."""
    with payments_service(own_database_url, tenure_url=service.url) as served:
        async with (
            AsyncTenure(service.url, holder="first") as first,
            AsyncTenure(service.url, holder="second") as second,
            httpx.AsyncClient(base_url=service.url, timeout=30) as tenure,
            httpx.AsyncClient(base_url=served.url, timeout=30) as payments,
            stream(tenure) as events,
        ):
            old = await first.acquire("daily-close", ttl=30)
            assert (await pay(payments, f"daily-close/{old.generation}", "a")).status_code == 201
            await first.release(old)
            new = await second.acquire("daily-close", ttl=30)
            assert (await pay(payments, f"daily-close/{new.generation}", "b")).status_code == 201
            stale = await pay(payments, f"daily-close/{old.generation}", "c")
            rejected = await events.until("fence.rejected")
            paid = (await payments.get("/payouts", params={"day": DAY})).json()

    assert stale.status_code == 409
    assert stale.json()["type"].endswith("/stale-generation")
    assert [payout["idempotency_key"] for payout in paid] == ["a", "b"]
    assert rejected.data | {"at": None} == {
        "type": "fence.rejected",
        "at": None,
        "resource": "payouts",
        "lease": "daily-close",
        "generation": old.generation,
        "reason": "stale_generation",
        "highest": new.generation,
    }
