"""Schemathesis against the committed OpenAPI document (openapi/openapi.json), with authentication
off and on: no request it can generate, valid or not, gets a 5xx, and every answer keeps the
document's promises (documented status, content type, body schema), every refusal being RFC 9457
problem+json.

The app runs in this process on a fresh database per operation, handed to each call (`app=`);
schemathesis's ASGI transport runs its lifespan (pool, durability check, monitor) and ends it when
each test ends. (`schemathesis.pytest.from_fixture` would be the other way, but it does not work
under pytest 9: it writes `Item._nodeid`.) The number of examples is bounded so that both runs
together stay under a minute.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from pydantic import SecretStr
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tests.support.tokens import bearer, tokens_toml

OPENAPI = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
PROBLEM_JSON = "application/problem+json"
# Per operation and phase; with the coverage phase's own cases this is ~20 s for one run.
MAX_EXAMPLES = 12

# Not the live event stream: the ASGI transport waits for a response to end, and a stream does
# not. tests/api/test_event_stream.py checks its events against the document and its refusals.
CONTRACT = schemathesis.openapi.from_path(
    OPENAPI,
    config=SchemathesisConfig.from_dict({"generation": {"max-examples": MAX_EXAMPLES}}),
).exclude(path="/v1/events/stream")
# Schema-valid input that the service refuses on purpose, with 422: limits that are settings
# (TTL and wait bounds, page size), cron expressions and time zones that do not exist, and
# generations a lease never handed out. A JSON schema cannot state these, so "schema-valid data
# is accepted" does not hold for this API; every other check runs.
NOT_CHECKED: list[schemathesis.CheckFunction] = [positive_data_acceptance]
# Function-scoped fixtures are the point (one database per operation); requests are slow
# compared with hypothesis's expectations.
EXAMPLES = settings(suppress_health_check=list(HealthCheck), deadline=None)

F = TypeVar("F", bound=Callable[..., Any])


def each_operation(test: F) -> F:
    """`CONTRACT.parametrize()`, typed: one test per operation of the document."""
    decorator: Callable[[F], F] = CONTRACT.parametrize()
    return decorator(test)


def refusals_are_problem_details(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case[Any]
) -> bool | None:
    """Every 4xx and 5xx is application/problem+json with type, title, status and detail, and
    the status in the body is the status of the response."""
    if response.status_code < 400:
        return None
    (content_type,) = response.headers.get("content-type", [""])
    assert content_type == PROBLEM_JSON, f"{response.status_code} answered as {content_type!r}"
    body = json.loads(response.content)
    assert isinstance(body, dict)
    assert body["type"].startswith("/problems/"), body
    assert body["status"] == response.status_code, body
    assert isinstance(body["title"], str), body
    assert isinstance(body["detail"], str), body
    assert body["title"], body
    assert body["detail"], body
    return None


def check(
    case: schemathesis.Case[Any], app: FastAPI, headers: dict[str, str] | None = None
) -> None:
    case.call_and_validate(
        app=app,
        headers=headers,
        excluded_checks=NOT_CHECKED,
        additional_checks=[refusals_are_problem_details],
    )


@pytest.fixture
def open_app(database_url: str) -> FastAPI:
    """Authentication off (every caller is the anonymous admin)."""
    return create_app(Settings(database_url=database_url))


@pytest.fixture
def secured_app(database_url: str) -> FastAPI:
    """Authentication on, with the principals of tests/auth."""
    return create_app(Settings(database_url=database_url, tokens=SecretStr(tokens_toml())))


@each_operation
@EXAMPLES
def test_without_authentication_the_api_keeps_its_contract(
    case: schemathesis.Case[Any], open_app: FastAPI
) -> None:
    """Auth off: never a 5xx; statuses, content types and bodies as documented."""
    check(case, open_app)


@each_operation
@EXAMPLES
def test_with_authentication_the_api_keeps_its_contract(
    case: schemathesis.Case[Any], secured_app: FastAPI
) -> None:
    """Auth on, as an admin, as a client of another namespace, with a wrong token and with none:
    never a 5xx; 401 and 403 are documented problem details like every other answer."""
    for headers in (
        bearer("admin"),
        bearer("ops-client"),
        {"Authorization": "Bearer tnr_not-a-token"},
        None,
    ):
        check(case, secured_app, headers)
