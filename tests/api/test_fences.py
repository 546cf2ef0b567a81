"""Verify-fence over HTTP: the highest generation a resource has seen only grows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

import httpx

from tests.api.test_leases import held, problem, release

T = TypeVar("T")


async def verify(
    api: httpx.AsyncClient, resource: str, lease: str, generation: int
) -> httpx.Response:
    return await api.post(
        f"/v1/fences/{resource}/verify", json={"lease": lease, "generation": generation}
    )


async def hand_out(
    api: httpx.AsyncClient,
    lease: str,
    generations: int,
    send: Callable[[int], Iterable[Coroutine[Any, Any, T]]] = lambda _: (),
) -> list[T]:
    """Hand `lease` to one holder after another (each acquires and releases) up to generation
    `generations`. While each generation is the current one, starts the requests `send` makes
    for it without waiting for them, so they are still in flight as the lease moves on; returns
    their answers, in the order sent."""
    sent: list[asyncio.Task[T]] = []
    for generation in range(1, generations + 1):
        holding = await held(api, lease, f"h{generation}")
        assert holding["generation"] == generation
        sent += [asyncio.create_task(request) for request in send(generation)]
        assert (await release(api, holding)).status_code == 200
    return await asyncio.gather(*sent)


async def test_verify_records_and_accepts_equal_generations(api: httpx.AsyncClient) -> None:
    """The first verify records the generation; the same generation passes again."""
    await hand_out(api, "close-day", 2)
    first = await verify(api, "payments", "close-day", 2)
    assert first.status_code == 200, first.text
    assert first.json()["highest"] == 2
    assert first.json()["lease"] == "close-day"
    assert (await verify(api, "payments", "close-day", 2)).status_code == 200


async def test_a_lower_generation_is_stale(api: httpx.AsyncClient) -> None:
    """After generation 3 is seen, generation 2 is refused with the highest seen."""
    await hand_out(api, "close-day", 3)
    assert (await verify(api, "payments", "close-day", 3)).status_code == 200
    body = problem(await verify(api, "payments", "close-day", 2), 409, "stale-generation")
    assert body["highest"] == 3


async def test_a_resource_is_fenced_by_one_lease(api: httpx.AsyncClient) -> None:
    """Another lease's generations cannot pass a resource fenced by the first lease."""
    await hand_out(api, "close-day", 1)
    await hand_out(api, "other", 1)
    await verify(api, "payments", "close-day", 1)
    body = problem(await verify(api, "payments", "other", 1), 409, "fence-lease-mismatch")
    assert body["lease"] == "close-day"


async def test_a_forged_generation_cannot_lock_the_resource(api: httpx.AsyncClient) -> None:
    """A generation above the lease's current one is unknown-generation and recorded nowhere."""
    await hand_out(api, "close-day", 2)
    body = problem(await verify(api, "payments", "close-day", 99), 422, "unknown-generation")
    assert body["current_generation"] == 2
    problem(await verify(api, "payments", "no-such-lease", 1), 422, "unknown-generation")
    assert (await verify(api, "payments", "close-day", 2)).json()["highest"] == 2
