"""Requests made inside a lease or run_once carry its fencing token through the httpx hook."""

from __future__ import annotations

import httpx

from tenure import (
    AsyncTenure,
    RunContext,
    Tenure,
    async_fencing_hook,
    current_fencing_token,
    fencing_hook,
    run_once,
)


def echo(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"token": request.headers.get("Fencing-Token")})


def test_a_sync_lease_sets_the_token_for_its_block_only(client: Tenure) -> None:
    """Inside `with client.lease(...)` the hook adds `<lease>/<generation>`; outside, nothing."""
    http = httpx.Client(
        transport=httpx.MockTransport(echo), event_hooks={"request": [fencing_hook]}
    )
    with client.lease("close-day", ttl=30) as lease:
        inside = http.get("http://payments.test/").json()["token"]
        assert inside == f"close-day/{lease.generation}"
    assert http.get("http://payments.test/").json()["token"] is None
    assert current_fencing_token() is None


def test_run_once_sets_the_token_for_fn(client: Tenure) -> None:
    """fn's outgoing requests carry the job lease's token."""
    http = httpx.Client(
        transport=httpx.MockTransport(echo), event_hooks={"request": [fencing_hook]}
    )

    def close_day(ctx: RunContext) -> str | None:
        token: str | None = http.get("http://payments.test/").json()["token"]
        assert token == f"close-day/{ctx.generation}"
        return token

    result = run_once(client, "close-day", "2026-09-25", close_day)
    assert result.ran
    assert result.value == f"close-day/{result.generation}"


async def test_an_async_lease_sets_the_token_for_its_task(service_url: str) -> None:
    """The async handle sets the token for the task running the block."""
    transport = httpx.MockTransport(echo)
    async with (
        AsyncTenure(service_url) as client,
        httpx.AsyncClient(
            transport=transport, event_hooks={"request": [async_fencing_hook]}
        ) as http,
        client.lease("close-day", ttl=30) as lease,
    ):
        answer = (await http.get("http://payments.test/")).json()["token"]
        assert answer == f"close-day/{lease.generation}"
    assert current_fencing_token() is None
