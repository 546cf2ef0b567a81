"""Who may do what: every endpoint × role, namespaces, and holdings bound to their principal."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from tests.api.test_leases import problem
from tests.support.tokens import TOKENS, bearer

HOLDING = {"holder": "h", "generation": 1}
# (method, path template, body); {ns} is replaced by the namespace under test.
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("POST", "/v1/leases/{ns}job/acquire", {"holder": "h", "ttl_seconds": 30}, "client"),
    ("POST", "/v1/leases/{ns}job/renew", {**HOLDING, "ttl_seconds": 30}, "client"),
    ("POST", "/v1/leases/{ns}job/release", {**HOLDING, "grant": "1"}, "client"),
    (
        "POST",
        "/v1/leases/renew",
        {"holder": "h", "ttl_seconds": 30, "leases": [{"name": "{ns}job", "generation": 1}]},
        "client",
    ),
    ("POST", "/v1/leases/{ns}job/force-release", None, "admin"),
    ("GET", "/v1/leases/{ns}job", None, "reader"),
    ("GET", "/v1/leases?prefix={ns}", None, "reader"),
    ("POST", "/v1/jobs/{ns}job/windows/w1/claim", {**HOLDING, "lease": "{ns}job"}, "client"),
    ("POST", "/v1/jobs/{ns}job/windows/w1/complete", {**HOLDING, "lease": "{ns}job"}, "client"),
    ("GET", "/v1/jobs/{ns}job/windows/w1", None, "reader"),
    ("GET", "/v1/jobs/{ns}job/windows", None, "reader"),
    ("POST", "/v1/fences/{ns}res/verify", {"lease": "{ns}job", "generation": 1}, "client"),
    (
        "POST",
        "/v1/fences/verify",
        {"fences": [{"resource": "{ns}res", "lease": "{ns}job", "generation": 1}]},
        "client",
    ),
    ("POST", "/v1/windows/resolve", {"cron": "* * * * *", "timezone": "UTC"}, "reader"),
]
RANK = {"reader": 0, "client": 1, "admin": 2}
PRINCIPAL_ROLE = {"admin": "admin", "billing-client": "client", "billing-reader": "reader"}


def fill(value: Any, ns: str) -> Any:
    if isinstance(value, str):
        return value.replace("{ns}", ns)
    if isinstance(value, dict):
        return {key: fill(item, ns) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item, ns) for item in value]
    return value


async def call(
    api: httpx.AsyncClient, endpoint: tuple[str, str, Any, str], ns: str, principal: str | None
) -> httpx.Response:
    method, path, body, _ = endpoint
    headers = bearer(principal) if principal else {}
    return await api.request(method, fill(path, ns), json=fill(body, ns), headers=headers)


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
@pytest.mark.parametrize("principal", ["admin", "billing-client", "billing-reader"])
async def test_each_role_may_do_what_it_is_for(
    secured: httpx.AsyncClient, endpoint: tuple[str, str, Any, str], principal: str
) -> None:
    """In its own namespace a principal is refused (403) exactly the actions above its role."""
    response = await call(secured, endpoint, "billing.", principal)
    allowed = RANK[PRINCIPAL_ROLE[principal]] >= RANK[endpoint[3]]
    if allowed:
        assert response.status_code not in (401, 403), response.text
    else:
        problem(response, 403, "forbidden")


@pytest.mark.parametrize("endpoint", ENDPOINTS[:-1], ids=lambda e: f"{e[0]} {e[1]}")
async def test_other_namespaces_are_refused(
    secured: httpx.AsyncClient, endpoint: tuple[str, str, Any, str]
) -> None:
    """A principal of `ops.` cannot touch, read or fence anything under `billing.`."""
    response = await call(secured, endpoint, "billing.", "ops-client")
    problem(response, 403, "forbidden")


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
async def test_no_or_a_wrong_token_is_unauthenticated(
    secured: httpx.AsyncClient, endpoint: tuple[str, str, Any, str]
) -> None:
    """Without a valid token every API call is 401 with a WWW-Authenticate challenge."""
    missing = await call(secured, endpoint, "billing.", None)
    problem(missing, 401, "unauthenticated")
    assert "Bearer" in missing.headers["www-authenticate"]
    method, path, body, _ = endpoint
    wrong = await secured.request(
        method,
        fill(path, "billing."),
        json=fill(body, "billing."),
        headers={"Authorization": "Bearer tnr_not-a-token"},
    )
    problem(wrong, 401, "unauthenticated")


async def test_health_and_docs_need_no_token(secured: httpx.AsyncClient) -> None:
    """Probes and the API description stay open."""
    for path in ("/healthz", "/readyz", "/openapi.json", "/problems/forbidden"):
        assert (await secured.get(path)).status_code == 200, path


async def test_a_token_works_as_a_basic_password_for_browsers(secured: httpx.AsyncClient) -> None:
    """`Authorization: Basic` with the token as password authenticates like Bearer."""
    basic = base64.b64encode(f"anyone:{TOKENS['billing-reader']}".encode()).decode()
    response = await secured.get(
        "/v1/leases?prefix=billing.", headers={"Authorization": f"Basic {basic}"}
    )
    assert response.status_code == 200, response.text


async def test_a_holder_string_cannot_be_borrowed_by_another_principal(
    secured: httpx.AsyncClient,
) -> None:
    """Renew, release, claim and complete by another principal are refused (403) even with the
    right holder, generation and grant, and a batch renew reports the holding lost; an acquire
    with the same holder string is lease-held."""
    lease = "/v1/leases/billing.job"
    taken = await secured.post(
        f"{lease}/acquire",
        json={"holder": "h", "ttl_seconds": 30},
        headers=bearer("billing-client"),
    )
    assert taken.status_code == 200, taken.text
    admin = bearer("admin")
    steal = await secured.post(
        f"{lease}/acquire", json={"holder": "h", "ttl_seconds": 30}, headers=admin
    )
    problem(steal, 409, "lease-held")
    renew = await secured.post(f"{lease}/renew", json={**HOLDING, "ttl_seconds": 30}, headers=admin)
    problem(renew, 403, "holding-of-another-principal")
    problem(
        await secured.post(
            f"{lease}/release", json={**HOLDING, "grant": taken.json()["grant"]}, headers=admin
        ),
        403,
        "holding-of-another-principal",
    )
    batch = {"holder": "h", "ttl_seconds": 30, "leases": [{"name": "billing.job", "generation": 1}]}
    theirs = (await secured.post("/v1/leases/renew", json=batch, headers=admin)).json()
    assert (theirs["renewed"], theirs["lost"]) == ([], batch["leases"])
    own = await secured.post("/v1/leases/renew", json=batch, headers=bearer("billing-client"))
    assert [lease["name"] for lease in own.json()["renewed"]] == ["billing.job"], own.text
    window = "/v1/jobs/billing.job/windows/w1"
    body = {**HOLDING, "lease": "billing.job"}
    problem(
        await secured.post(f"{window}/claim", json=body, headers=admin),
        403,
        "holding-of-another-principal",
    )
    mine = await secured.post(f"{window}/claim", json=body, headers=bearer("billing-client"))
    assert mine.status_code == 200, mine.text
    problem(
        await secured.post(f"{window}/complete", json=body, headers=admin),
        403,
        "holding-of-another-principal",
    )
    current = (await secured.get(lease, headers=admin)).json()
    assert (current["holder"], current["generation"], current["held"]) == ("h", 1, True)


async def test_force_release_ends_the_holding_and_fences_out_the_old_holder(
    secured: httpx.AsyncClient, database_url: str
) -> None:
    """An admin's force-release bumps the generation: the old holder can neither renew nor pass
    the fence, and the event names the admin."""
    client, admin = bearer("billing-client"), bearer("admin")
    lease = "/v1/leases/billing.job"
    await secured.post(f"{lease}/acquire", json={"holder": "h", "ttl_seconds": 60}, headers=client)
    fence = "/v1/fences/billing.payments/verify"
    await secured.post(fence, json={"lease": "billing.job", "generation": 1}, headers=client)
    forced = await secured.post(f"{lease}/force-release", headers=admin)
    assert forced.status_code == 200, forced.text
    assert (forced.json()["generation"], forced.json()["held"]) == (2, False)
    renew = await secured.post(
        f"{lease}/renew", json={**HOLDING, "ttl_seconds": 60}, headers=client
    )
    problem(renew, 409, "lease-lost")
    stale = await secured.post(
        fence, json={"lease": "billing.job", "generation": 1}, headers=client
    )
    assert problem(stale, 409, "stale-generation")["highest"] == 2
    again = await secured.post(
        f"{lease}/acquire", json={"holder": "h", "ttl_seconds": 60}, headers=client
    )
    assert again.json()["generation"] == 3
    import asyncpg

    connection = await asyncpg.connect(database_url)
    try:
        row = await connection.fetchrow(
            "SELECT actor, previous_holder FROM lease_events WHERE kind = 'force_released'"
        )
    finally:
        await connection.close()
    assert row is not None
    assert (row["actor"], row["previous_holder"]) == ("admin", "h")
    problem(
        await secured.post("/v1/leases/billing.none/force-release", headers=admin),
        404,
        "lease-not-found",
    )
