"""The hot routes answer alike whether the express lane or FastAPI serves them.

httpx sends `application/json`, which takes the express lane; the same request with a
`charset` parameter goes through FastAPI (tests/unit/test_express.py shows the hand-over)."""

from __future__ import annotations

from typing import Any

import httpx

EXPRESS = {"content-type": "application/json"}
FASTAPI = {"content-type": "application/json; charset=utf-8"}
# What differs between two answers in a row: times (`*_at`), waits, and each acquire's grant.
VOLATILE = {"expires_in_seconds", "retry_after_seconds", "detail", "grant"}


async def both(api: httpx.AsyncClient, path: str, body: str) -> list[httpx.Response]:
    return [await api.post(path, content=body, headers=headers) for headers in (EXPRESS, FASTAPI)]


def stable(answer: Any) -> Any:
    if isinstance(answer, list):
        return [stable(item) for item in answer]
    if isinstance(answer, dict):
        return {
            k: stable(v) for k, v in answer.items() if k not in VOLATILE and not k.endswith("_at")
        }
    return answer


def alike(responses: list[httpx.Response], *, but: str = "") -> dict[str, Any]:
    """Asserts both answers agree on status, media type, Retry-After and every stable field
    (but the one named)."""
    express, fastapi = responses
    assert express.status_code == fastapi.status_code, (express.text, fastapi.text)
    assert express.headers["content-type"] == fastapi.headers["content-type"]
    assert ("retry-after" in express.headers) == ("retry-after" in fastapi.headers)
    first, second = express.json(), fastapi.json()
    assert first.keys() == second.keys()
    first.pop(but, None)
    second.pop(but, None)
    assert stable(first) == stable(second)
    body: dict[str, Any] = first
    return body


async def test_grants_renewals_fences_and_releases_answer_alike(api: httpx.AsyncClient) -> None:
    lease = alike(await both(api, "/v1/leases/job/acquire", '{"holder": "a", "ttl_seconds": 30}'))
    assert lease["generation"] == 1
    renew = '{"holder": "a", "generation": 1, "ttl_seconds": 30}'
    assert alike(await both(api, "/v1/leases/job/renew", renew))["generation"] == 1
    verify = '{"lease": "job", "generation": 1}'
    assert alike(await both(api, "/v1/fences/store/verify", verify))["highest"] == 1
    batch = '{"holder": "a", "ttl_seconds": 30, "leases": [{"name": "job", "generation": 1}]}'
    renewals = await both(api, "/v1/leases/renew", batch)
    renewed = alike(renewals)
    assert [lease["generation"] for lease in renewed["renewed"]] == [1]
    (latest,) = renewals[-1].json()["renewed"]  # the holding's latest grant
    fences = '{"fences": [{"resource": "store", "lease": "job", "generation": 1}]}'
    verified = alike(await both(api, "/v1/fences/verify", fences))
    assert [fence["highest"] for fence in verified["accepted"]] == [1]
    release = f'{{"holder": "a", "generation": 1, "grant": "{latest["grant"]}"}}'
    assert alike(await both(api, "/v1/leases/job/release", release))["held"] is False


async def test_refusals_answer_alike(api: httpx.AsyncClient) -> None:
    await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    held = alike(await both(api, "/v1/leases/job/acquire", '{"holder": "b", "ttl_seconds": 30}'))
    assert held["type"] == "/problems/lease-held"
    lost = alike(
        await both(
            api, "/v1/leases/job/renew", '{"holder": "b", "generation": 1, "ttl_seconds": 30}'
        )
    )
    assert lost["type"] == "/problems/lease-lost"
    stale = alike(await both(api, "/v1/fences/store/verify", '{"lease": "job", "generation": 0}'))
    assert stale["status"] in (409, 422)
    others = '{"holder": "b", "ttl_seconds": 30, "leases": [{"name": "job", "generation": 1}]}'
    assert alike(await both(api, "/v1/leases/renew", others))["lost"] == [
        {"name": "job", "generation": 1}
    ]
    duplicated = '{"holder": "a", "ttl_seconds": 30, "leases": [{"name": "job", "generation": 1},'
    duplicated += ' {"name": "job", "generation": 1}]}'
    assert alike(await both(api, "/v1/leases/renew", duplicated))["status"] == 422
    forged = '{"fences": [{"resource": "store", "lease": "job", "generation": 7}]}'
    (refused,) = alike(await both(api, "/v1/fences/verify", forged))["refused"]
    assert refused["problem"]["type"] == "/problems/unknown-generation"
    invalid = alike(await both(api, "/v1/leases/job/acquire", '{"holder": ""}'))
    assert invalid["type"] == "/problems/validation-error"


async def test_window_claims_and_completions_answer_alike(api: httpx.AsyncClient) -> None:
    await api.post("/v1/leases/job/acquire", json={"holder": "a", "ttl_seconds": 30})
    holding = '{"holder": "a", "lease": "job", "generation": 1}'
    windows = "/v1/jobs/close-day/windows/"
    claims = await both(api, windows + "2026-09-25/claim", holding)
    assert [claim.json()["attempt"] for claim in claims] == [1, 2]  # the second resumes it
    assert alike(claims, but="attempt")["status"] == "running"
    completed = alike(await both(api, windows + "2026-09-25/complete", holding))
    assert completed["status"] == "completed"
    done = alike(await both(api, windows + "2026-09-25/claim", holding))
    assert done["type"] == "/problems/window-completed"
    stale = '{"holder": "a", "lease": "job", "generation": 0}'
    invalid = alike(await both(api, windows + "2026-09-26/claim", stale))
    assert invalid["type"] == "/problems/validation-error"
    lost = '{"holder": "b", "lease": "job", "generation": 1}'
    assert alike(await both(api, windows + "2026-09-26/claim", lost))["status"] == 409
