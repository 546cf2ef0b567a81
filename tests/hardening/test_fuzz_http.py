"""Hostile input through the HTTP API (the app in this process, a real database): names, holders,
window keys, cursors, Authorization headers, cron expressions and time zones. Never a 5xx; every
refusal is problem+json; well-formed input is served."""

from __future__ import annotations

import base64
import json
import re
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from tenure_server.domain.names import NAME_PATTERN, WINDOW_PATTERN
from tenure_server.domain.principals import SERVICE_NAMESPACE
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.api.test_leases import PROBLEM
from tests.hardening.strategies import (
    authorization_values,
    cron_expressions,
    instants,
    json_values,
    names,
    text,
    time_zones,
    window_keys,
)
from tests.support.lifespan import running
from tests.support.tokens import bearer, tokens_toml

# The app and its database are shared by the examples of a test: each example uses names of
# its own where state would interfere.
EXAMPLES = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def segment(value: str) -> str:
    """`value` as one path segment, percent-encoded. "." and ".." are encoded too: a client
    would otherwise remove them as dot segments (RFC 3986), and the request never names them."""
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def answered(response: httpx.Response, *expected: int) -> httpx.Response:
    """No 5xx; a refusal is problem+json whose body status is the response's; the status is
    one of `expected`."""
    status = response.status_code
    assert status < 500, response.text
    if status >= 400:
        assert response.headers["content-type"] == PROBLEM, response.text
        body = response.json()
        assert body["status"] == status
        assert body["type"].startswith("/problems/")
        assert body["detail"]
    assert status in expected, response.text
    return response


def fresh(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


@EXAMPLES
@example(name="tenure.monitor")
@given(name=names)
async def test_any_lease_name_is_served_or_refused_cleanly(
    api: httpx.AsyncClient, name: str
) -> None:
    """A well-formed name is acquired and read back, but one reserved to the service (403);
    any other is 404/405/422 problem+json."""
    valid = re.fullmatch(NAME_PATTERN, name) is not None
    body = {"holder": "fuzz", "ttl_seconds": 30}
    acquired = await api.post(f"/v1/leases/{segment(name)}/acquire", json=body)
    read = await api.get(f"/v1/leases/{segment(name)}")
    if valid and name.startswith(SERVICE_NAMESPACE):
        assert answered(acquired, 403).json()["type"] == "/problems/reserved-name"
        answered(read, 200, 404)  # the monitor's own lease, once it has run
    elif valid:
        assert answered(acquired, 200).json()["name"] == name
        assert answered(read, 200).json()["generation"] == 1
    else:
        # The empty name is the listing's path with a trailing slash: a redirect to it.
        answered(acquired, 307, 404, 405, 422)
        answered(read, 307, 404, 405, 422)


@EXAMPLES
@given(holder=json_values, ttl=json_values, wait=st.one_of(st.just(0), json_values))
async def test_any_acquire_body_is_served_or_refused_cleanly(
    api: httpx.AsyncClient, holder: Any, ttl: Any, wait: Any
) -> None:
    """Holders, TTLs and waits of any JSON type and value: 200 with the holder as sent when all
    are in bounds, 422 otherwise; never a wait beyond the bound, never a 5xx."""
    # json.dumps writes NaN and Infinity, which Python's JSON parser (the service's) reads.
    body = json.dumps({"holder": holder, "ttl_seconds": ttl, "wait_seconds": wait})
    response = await api.post(
        f"/v1/leases/{fresh('body')}/acquire",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    if answered(response, 200, 422).status_code == 200:
        assert response.json()["holder"] == holder


@EXAMPLES
@given(key=window_keys)
async def test_any_window_key_is_served_or_refused_cleanly(
    api: httpx.AsyncClient, key: str
) -> None:
    """A well-formed window key can be claimed under a held lease and read back; any other key
    (including "." and "..", which no client sends as a segment) is 404/405/422 problem+json."""
    lease = await api.post("/v1/leases/keys/acquire", json={"holder": "h", "ttl_seconds": 60})
    holding = {
        "holder": "h",
        "lease": "keys",
        "generation": answered(lease, 200).json()["generation"],
    }
    job = fresh("job")
    claimed = await api.post(f"/v1/jobs/{job}/windows/{segment(key)}/claim", json=holding)
    read = await api.get(f"/v1/jobs/{job}/windows/{segment(key)}")
    if re.fullmatch(WINDOW_PATTERN, key) and key not in {".", ".."}:
        assert answered(claimed, 200).json()["window"] == key
        answered(read, 200)
    else:
        answered(claimed, 307, 404, 405, 422)
        answered(read, 307, 404, 405, 422)


@EXAMPLES
@given(
    path=st.sampled_from(["/v1/leases", "/v1/jobs/nightly/windows"]),
    cursor=st.one_of(text, names),
    limit=st.one_of(st.none(), text, st.integers().map(str)),
)
async def test_any_cursor_or_page_size_is_served_or_refused_cleanly(
    api: httpx.AsyncClient, path: str, cursor: str, limit: str | None
) -> None:
    """Listings take any cursor and limit: 200, or 422 naming the parameter."""
    params = {"cursor": cursor} if limit is None else {"cursor": cursor, "limit": limit}
    answered(await api.get(path, params=params), 200, 422)


@EXAMPLES
@example(cron="0 0 * * *", zone="UTC", at="0001-01-01T00:00:00+00:00", key="date")
@example(cron="0 0 * * *", zone="UTC", at="0001-01-01T12:00:00+00:00", key="previous_day")
@example(cron="0 0 30 2 *", zone="UTC", at=None, key="date")
@given(
    cron=cron_expressions,
    zone=time_zones,
    at=st.one_of(st.none(), instants.map(lambda moment: moment.isoformat()), text),
    key=st.one_of(st.sampled_from(["occurrence", "date", "previous_day"]), json_values),
)
async def test_any_schedule_resolves_or_is_refused_cleanly(
    api: httpx.AsyncClient, cron: str, zone: str, at: str | None, key: Any
) -> None:
    """POST /v1/windows/resolve with any cron, time zone, instant and key format: 200 with a
    well-formed window key, or 422 problem+json."""
    body: dict[str, Any] = {"cron": cron, "timezone": zone, "key": key}
    if at is not None:
        body["at"] = at
    # json.dumps writes NaN and Infinity too (the key may be any JSON value), as clients may.
    sent = await api.post(
        "/v1/windows/resolve",
        content=json.dumps(body),
        headers={"content-type": "application/json"},
    )
    response = answered(sent, 200, 422)
    if response.status_code == 200:
        assert re.fullmatch(WINDOW_PATTERN, response.json()["window"])


@pytest.fixture
async def secured(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=database_url, tokens=SecretStr(tokens_toml())))
    async with running(app) as served:
        transport = httpx.ASGITransport(app=served)
        async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as api:
            yield api


@EXAMPLES
@example(header=b"Basic " + base64.b64encode(b"user: tnr_admin-token"))
@given(header=authorization_values)
async def test_any_authorization_header_is_a_clean_401(
    secured: httpx.AsyncClient, header: bytes
) -> None:
    """Garbage, wrong schemes, Basic with broken base64 or non-UTF-8 credentials, 2 kB tokens:
    401 problem+json with a challenge, on reads and writes alike."""
    headers = {b"Authorization": header}
    read = answered(await secured.get("/v1/leases/billing.x", headers=headers), 401)
    assert "Bearer" in read.headers["www-authenticate"]
    body = {"holder": "h", "ttl_seconds": 30}
    write = await secured.post("/v1/leases/billing.x/acquire", json=body, headers=headers)
    answered(write, 401)
    assert (await secured.get("/v1/leases/billing.x", headers=bearer("admin"))).status_code == 404
