"""POST /v1/fences/verify: many resources' fences verified in one statement, each accepted or
refused exactly as a single verify would be."""

from __future__ import annotations

import random
from collections.abc import Coroutine
from typing import Any

import asyncpg
import httpx

from tests.api.test_fences import hand_out, verify
from tests.api.test_leases import held, problem


async def verify_many(api: httpx.AsyncClient, fences: list[tuple[str, str, int]]) -> httpx.Response:
    return await api.post(
        "/v1/fences/verify",
        json={
            "fences": [
                {"resource": resource, "lease": lease, "generation": generation}
                for resource, lease, generation in fences
            ]
        },
    )


async def test_each_verify_is_decided_as_a_single_verify_would_be(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """The current generation passes a new fence, an equal one and one it raises; a stale one,
    another lease's and a generation never handed out are refused with the single verify's
    problem, recorded, and write nothing."""
    await hand_out(api, "close-day", 2)
    assert (await verify(api, "raised", "close-day", 2)).status_code == 200
    assert (await held(api, "close-day", "h3"))["generation"] == 3
    await hand_out(api, "other", 1)
    for resource in ("equal", "stale"):
        assert (await verify(api, resource, "close-day", 3)).status_code == 200
    assert (await verify(api, "foreign", "other", 1)).status_code == 200
    accepted = [("new", "close-day", 3), ("equal", "close-day", 3), ("raised", "close-day", 3)]
    refused = [
        ("stale", "close-day", 2, 409, "stale-generation"),
        ("foreign", "close-day", 3, 409, "fence-lease-mismatch"),
        ("forged", "close-day", 9, 422, "unknown-generation"),
        ("nowhere", "no-such-lease", 1, 422, "unknown-generation"),
    ]
    response = await verify_many(api, accepted + [entry[:3] for entry in refused])
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(fence["resource"], fence["highest"]) for fence in body["accepted"]] == [
        ("new", 3),
        ("equal", 3),
        ("raised", 3),
    ]
    assert [entry["resource"] for entry in body["refused"]] == [entry[0] for entry in refused]
    for entry, (resource, lease, generation, status, slug) in zip(
        body["refused"], refused, strict=True
    ):
        assert (entry["lease"], entry["generation"]) == (lease, generation)
        alone = problem(await verify(api, resource, lease, generation), status, slug)
        assert entry["problem"] == alone
    # Nothing refused was written: the stale fence stays at 3, the forged one does not exist.
    assert (await verify(api, "stale", "close-day", 3)).json()["highest"] == 3
    assert (await verify(api, "forged", "other", 1)).status_code == 200
    rows = await connection.fetch(
        "SELECT resource, kind, generation, highest FROM fence_events ORDER BY id"
    )
    recorded = [(row["resource"], row["kind"], row["generation"], row["highest"]) for row in rows]
    once = [
        ("stale", "stale_generation", 2, 3),
        ("foreign", "lease_mismatch", 3, None),
        ("forged", "unknown_generation", 9, 3),
        ("nowhere", "unknown_generation", 1, None),
    ]
    # By the batch, then by the single verifies it was compared with.
    assert recorded == once * 2


async def test_racing_batches_only_raise_fences_and_never_deadlock(
    api: httpx.AsyncClient, connection: asyncpg.Connection[asyncpg.Record]
) -> None:
    """Holders of successive generations verify overlapping resources in shuffled orders, each
    holding's batches still in flight as the lease moves on: every batch is answered, refusing
    only generations below one already handed out, and each fence ends at the highest
    generation any batch had accepted for it."""
    resources = [f"store-{n:02d}" for n in range(40)]
    rng = random.Random(7)
    batches: list[list[tuple[str, str, int]]] = []

    def send(generation: int) -> list[Coroutine[Any, Any, httpx.Response]]:
        three = [[(r, "job", generation) for r in rng.sample(resources, 25)] for _ in range(3)]
        batches.extend(three)
        return [verify_many(api, batch) for batch in three]

    responses = await hand_out(api, "job", 6, send)
    highest_accepted: dict[str, int] = {}
    for batch, response in zip(batches, responses, strict=True):
        assert response.status_code == 200, response.text
        body = response.json()
        assert len(body["accepted"]) + len(body["refused"]) == len(batch)
        for fence in body["accepted"]:
            highest_accepted[fence["resource"]] = max(
                highest_accepted.get(fence["resource"], 0), fence["highest"]
            )
        for entry in body["refused"]:
            assert entry["problem"]["type"] == "/problems/stale-generation"
            assert entry["problem"]["highest"] > entry["generation"]
    fences = await connection.fetch("SELECT resource, highest_generation FROM fences")
    assert {row["resource"]: row["highest_generation"] for row in fences} == highest_accepted


async def test_bad_batches_are_refused(api: httpx.AsyncClient) -> None:
    """Empty, oversized, a resource twice, or a malformed name: 422 naming the field."""
    problem(await verify_many(api, []), 422, "validation-error")
    twice = problem(
        await verify_many(api, [("a", "job", 1), ("a", "other", 1)]), 422, "validation-error"
    )
    assert twice["errors"][0]["field"] == "fences"
    many = [(f"r{i}", "job", 1) for i in range(1001)]
    oversized = problem(await verify_many(api, many), 422, "validation-error")
    assert oversized["errors"][0]["field"] == "fences"
    malformed = problem(await verify_many(api, [("a b", "job", 1)]), 422, "validation-error")
    assert malformed["errors"][0]["field"].startswith("fences")
    zero = problem(await verify_many(api, [("a", "job", 0)]), 422, "validation-error")
    assert "generation" in zero["errors"][0]["field"]
