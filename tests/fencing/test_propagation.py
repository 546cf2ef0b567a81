"""The httpx hooks send the current fencing token with every request made inside a
`fencing_token` block, and only there, to a tiny ASGI app that echoes what it received."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tenure._middleware import Receive, Scope, Send
from tenure._propagation import (
    async_fencing_hook,
    current_fencing_token,
    fencing_hook,
    fencing_token,
)


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with the request's Fencing-Token values as a JSON list."""
    values = [v.decode() for k, v in scope["headers"] if k.lower() == b"fencing-token"]
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": json.dumps(values).encode()})


def async_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=echo),
        base_url="http://test",
        event_hooks={"request": [async_fencing_hook]},
    )


async def sent(http: httpx.AsyncClient, **options: object) -> list[str]:
    values: list[str] = (await http.post("/", **options)).json()  # type: ignore[arg-type]
    return values


async def test_requests_inside_the_block_carry_the_token_and_others_do_not() -> None:
    """Inside `fencing_token(lease, generation)` every request carries `Fencing-Token`; before
    and after, none does."""
    async with async_client() as http:
        assert await sent(http) == []
        with fencing_token("close-day", 7) as token:
            assert token == "close-day/7"
            assert await sent(http) == ["close-day/7"]
            assert await sent(http) == ["close-day/7"]
        assert await sent(http) == []


async def test_blocks_nest_and_restore_the_outer_token() -> None:
    """An inner block's token replaces the outer one until it ends."""
    async with async_client() as http:
        with fencing_token("a", 1):
            with fencing_token("b", 2):
                assert await sent(http) == ["b/2"]
            assert await sent(http) == ["a/1"]
        assert current_fencing_token() is None


async def test_an_explicit_header_wins_over_the_current_token() -> None:
    """A request that already carries `Fencing-Token` keeps it; it is never sent twice."""
    async with async_client() as http:
        with fencing_token("a", 1):
            assert await sent(http, headers={"Fencing-Token": "a/2"}) == ["a/2"]


async def test_concurrent_tasks_each_send_their_own_token() -> None:
    """The token follows the task that set it: two concurrent jobs never swap tokens."""
    async with async_client() as http:

        async def job(lease: str, generation: int) -> list[str]:
            with fencing_token(lease, generation):
                await asyncio.sleep(0.01)
                return await sent(http)

        assert list(await asyncio.gather(job("a", 1), job("b", 2))) == [["a/1"], ["b/2"]]


def echo_wsgi(environ: dict[str, Any], start_response: Callable[..., object]) -> list[bytes]:
    """The same echo as a WSGI app, for the sync client."""
    value = environ.get("HTTP_FENCING_TOKEN")
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps([] if value is None else value.split(",")).encode()]


async def test_the_sync_hook_adds_the_token_to_an_httpx_client() -> None:
    """`fencing_hook` does the same for `httpx.Client` (here in a worker thread, which
    `asyncio.to_thread` gives the caller's context)."""

    def call() -> list[str]:
        transport = httpx.WSGITransport(app=echo_wsgi)
        with httpx.Client(
            transport=transport, base_url="http://test", event_hooks={"request": [fencing_hook]}
        ) as http:
            values: list[str] = http.post("/").json()
            return values

    assert await asyncio.to_thread(call) == []
    with fencing_token("close-day", 9):
        assert await asyncio.to_thread(call) == ["close-day/9"]


def test_a_malformed_token_is_refused_when_the_block_starts() -> None:
    """`fencing_token` validates its token: nothing malformed is ever sent."""
    with pytest.raises(ValueError, match="generation"), fencing_token("a", 0):
        pass
    with pytest.raises(ValueError, match="lease name"), fencing_token("a/b", 1):
        pass
    assert current_fencing_token() is None
