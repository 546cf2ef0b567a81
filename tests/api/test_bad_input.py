"""Bad input gets a clear 4xx problem+json naming the field; never a 500, never a write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tenure import MAX_GENERATION
from tenure.problems import ProblemType
from tenure_server.api.problems import ALL_TYPES
from tests.api.test_leases import problem

ACQUIRE = "/v1/leases/close-day/acquire"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"holder": "a"}, "ttl_seconds"),
        ({"ttl_seconds": 30}, "holder"),
        ({"holder": "", "ttl_seconds": 30}, "holder"),
        ({"holder": "x" * 201, "ttl_seconds": 30}, "holder"),
        ({"holder": "a\nb", "ttl_seconds": 30}, "holder"),
        ({"holder": "a", "ttl_seconds": "30"}, "ttl_seconds"),
        ({"holder": 7, "ttl_seconds": 30}, "holder"),
        ({"holder": "a", "ttl_seconds": -1}, "ttl_seconds"),
        ({"holder": "a", "ttl_seconds": 0.5}, "ttl_seconds"),
        ({"holder": "a", "ttl_seconds": 3601}, "ttl_seconds"),
        ({"holder": "a", "ttl_seconds": 1e308}, "ttl_seconds"),
        ({"holder": "a", "ttl_seconds": 30, "tll": 5}, "tll"),
    ],
)
async def test_acquire_body_errors_name_the_field(
    api: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    """Missing, mistyped, out-of-bounds and unknown fields are 422 validation-error."""
    found = problem(await api.post(ACQUIRE, json=body), 422, "validation-error")
    assert field in [error["field"] for error in found["errors"]]
    assert (await api.get("/v1/leases/close-day")).status_code == 404


@pytest.mark.parametrize(
    "generation",
    [0, -1, MAX_GENERATION + 1, 2**63, 10**30, "1", 1.5, None],
    ids=lambda value: repr(value),
)
async def test_generations_must_be_positive_and_at_most_the_largest_handed_out(
    api: httpx.AsyncClient, generation: Any
) -> None:
    """A generation outside 1..2^53-1 (MAX_GENERATION), or not an integer, is 422 on every
    endpoint taking one."""
    for path, extra in (
        ("/v1/leases/close-day/renew", {"holder": "a", "ttl_seconds": 30}),
        ("/v1/leases/close-day/release", {"holder": "a", "grant": "1"}),
        ("/v1/jobs/j/windows/w/claim", {"holder": "a", "lease": "close-day"}),
        ("/v1/fences/r/verify", {"lease": "close-day"}),
    ):
        response = await api.post(path, json={**extra, "generation": generation})
        found = problem(response, 422, "validation-error")
        assert "generation" in [error["field"] for error in found["errors"]]


@pytest.mark.parametrize(
    "name", ["-starts-with-dash", ".dot", "has space", "semi;colon", "x" * 201, "ünïcode", "a*b"]
)
async def test_bad_names_are_refused(api: httpx.AsyncClient, name: str) -> None:
    """Names outside [A-Za-z0-9._:-] (starting alphanumeric, ≤ 200) are 422."""
    response = await api.post(f"/v1/leases/{name}/acquire", json={"holder": "a", "ttl_seconds": 5})
    found = problem(response, 422, "validation-error")
    assert "name" in [error["field"] for error in found["errors"]]


@pytest.mark.parametrize("key", ["has space", "x" * 101, "a/b", "ключ"])
async def test_bad_window_keys_are_refused(api: httpx.AsyncClient, key: str) -> None:
    """Window keys outside [A-Za-z0-9._:+-]{1,100} are 422."""
    response = await api.post(
        f"/v1/jobs/close-day/windows/{key}/claim",
        json={"holder": "a", "lease": "close-day", "generation": 1},
    )
    assert response.status_code in (404, 422), response.text
    assert response.headers["content-type"] == "application/problem+json"


async def test_an_iso_occurrence_with_offset_is_a_valid_window_key(api: httpx.AsyncClient) -> None:
    """Keys such as 2026-09-25T00:05:00+02:00 are accepted as they are."""
    await api.post(ACQUIRE, json={"holder": "a", "ttl_seconds": 30})
    response = await api.post(
        "/v1/jobs/close-day/windows/2026-09-25T00:05:00+02:00/claim",
        json={"holder": "a", "lease": "close-day", "generation": 1},
    )
    assert response.status_code == 200, response.text
    assert response.json()["window"] == "2026-09-25T00:05:00+02:00"


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b"null", b'"text"', b'{"holder": "a", "ttl_seconds": NaN}', b"\xff\xfe"],
)
async def test_malformed_json_is_a_validation_problem(
    api: httpx.AsyncClient, content: bytes
) -> None:
    """Bodies that are not a JSON object of the schema are 422, not 500."""
    response = await api.post(
        ACQUIRE, content=content, headers={"content-type": "application/json"}
    )
    problem(response, 422, "validation-error")


async def test_huge_inputs_are_refused(api: httpx.AsyncClient) -> None:
    """A megabyte holder or a deeply nested body is refused before parsing: 413, never a crash."""
    huge = await api.post(ACQUIRE, json={"holder": "h" * 1_000_000, "ttl_seconds": 30})
    problem(huge, 413, "payload-too-large")
    nested = "[" * 300_000 + "]" * 300_000
    deep = await api.post(
        ACQUIRE,
        content=f'{{"holder": {nested}, "ttl_seconds": 30}}'.encode(),
        headers={"content-type": "application/json"},
    )
    problem(deep, 413, "payload-too-large")
    holder = await api.post(ACQUIRE, json={"holder": "h" * 5_000, "ttl_seconds": 30})
    problem(holder, 422, "validation-error")


async def test_a_streamed_body_over_the_limit_is_refused(api: httpx.AsyncClient) -> None:
    """A chunked body without Content-Length is counted as it arrives and refused past the limit."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"holder": "'
        for _ in range(300):
            yield b"x" * 1024
        yield b'", "ttl_seconds": 30}'

    response = await api.post(
        ACQUIRE, content=chunks(), headers={"content-type": "application/json"}
    )
    problem(response, 413, "payload-too-large")


async def test_unknown_routes_and_methods_are_problems(api: httpx.AsyncClient) -> None:
    """404 and 405 from the router use problem+json too."""
    problem(await api.get("/v1/nothing"), 404, "not-found")
    problem(await api.delete("/v1/leases/close-day"), 405, "method-not-allowed")


async def test_problem_types_are_documented_at_their_uri(api: httpx.AsyncClient) -> None:
    """GET on a problem type's URI says what the problem means and what to do about it, for
    every type the service answers."""
    found = await api.get("/problems/lease-held")
    assert found.json() == {
        "type": "/problems/lease-held",
        "title": "Lease is held by another holder",
        "status": 409,
        "description": ProblemType.LEASE_HELD.description,
    }
    assert "wait_seconds" in found.json()["description"]
    for kind in ALL_TYPES:
        assert (await api.get(kind.type)).json()["description"] == kind.description
