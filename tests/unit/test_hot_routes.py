"""The hot routes are one table: FastAPI's routes and the express lane serve the same paths with
the same path-parameter checks, and a FastAPI route cannot gain work the lane would skip."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_params_to_args
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.routing import Match

from tenure_server.api.dependencies import ContextDep
from tenure_server.api.express import Express
from tenure_server.api.hot_routes import HOT_ROUTES, HotRoute
from tenure_server.api.paths import LeasePath
from tenure_server.api.schemas import AcquireRequest
from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings

# What the lane does itself of a hot route's dependencies: it calls `context_of`, which is what
# ContextDep's dependency calls (authentication, the rate limit, the operations and limits).
REPRODUCED = {get_args(ContextDep)[1].dependency}

# Path segments around the edges of the name and window-key types.
SEGMENTS = [
    "job",
    "a:b.c-d_e",
    "renew",
    "verify",
    "n" * 200,
    "n" * 201,
    "-job",
    ".",
    "..",
    "...",
    "a b",
    "a\n",
    "é",
    "2026-09-25T00:05:00+00:00",
    "1" * 100,
    "1" * 101,
]
TEMPLATES = [
    "/v1/leases/{}/acquire",
    "/v1/leases/{}/renew",
    "/v1/leases/{}/release",
    "/v1/leases/{}/steal",
    "/v1/leases/renew{}",
    "/v1/fences/{}/verify",
    "/v1/fences/verify{}",
    "/v1/jobs/{}/windows/{}/claim",
    "/v1/jobs/close-day/windows/{}/complete",
    "/v1/jobs/{}/windows/2026-09-25/complete",
    "/v1/jobs/{}/windows/{}/complete/",
]


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(Settings())


def hot_api_routes(app: FastAPI) -> list[tuple[HotRoute[Any, Any], RouteContext]]:
    """Each hot route and FastAPI's route for its path, as FastAPI serves it (with the
    dependencies it adds to every route), in FastAPI's order."""
    table = {route.path: route for route in HOT_ROUTES}
    return [
        (table[str(route.path)], route)
        for route in iter_route_contexts(app.router.routes)
        if isinstance(route.original_route, APIRoute) and route.path in table
    ]


def tree(dependant: Dependant) -> list[Dependant]:
    """`dependant` and every dependency under it, the route's own and the app's alike."""
    return [dependant, *(found for sub in dependant.dependencies for found in tree(sub))]


def test_each_hot_route_is_one_fastapi_route_of_the_same_method_and_path(app: FastAPI) -> None:
    """The table's routes are FastAPI's, in the table's order."""
    routes = [(hot, route.methods) for hot, route in hot_api_routes(app)]
    assert routes == [(hot, {hot.method}) for hot in HOT_ROUTES]


def test_a_hot_route_depends_on_nothing_the_lane_does_not_do(app: FastAPI) -> None:
    """A dependency added to a hot route (or to every route) fails this until the lane does the
    same work: the lane would answer without it."""
    for _, route in hot_api_routes(app):
        assert {dependant.call for dependant in tree(route.dependant)[1:]} == REPRODUCED


def test_a_hot_route_reads_only_its_path_its_body_and_the_request(app: FastAPI) -> None:
    """The lane hands the action the path parameters and the body, and answers with what the
    action returns: a query, header or cookie parameter would be one it never reads, background
    tasks or a `Response` parameter work it never does."""
    for hot, route in hot_api_routes(app):
        own = route.dependant
        assert [p.name for p in own.path_params] == list(hot.path_types)
        assert [p.field_info.annotation for p in own.body_params] == [hot.body]
        assert own.request_param_name == "request"
        for dependant in tree(own):
            assert dependant.query_params == dependant.header_params == []
            assert dependant.cookie_params == []
            assert dependant.response_param_name is None
            assert dependant.background_tasks_param_name is None
            assert dependant.security_scopes_param_name is None
        for dependency in tree(own)[1:]:
            assert dependency.path_params == dependency.body_params == []


def test_no_middleware_sits_between_the_lane_and_the_routes(app: FastAPI) -> None:
    """A middleware added inside the lane would run for FastAPI's answers only."""
    innermost: object = app.user_middleware[-1].cls
    assert innermost is Express


def fastapi_choice(app: FastAPI, path: str) -> tuple[HotRoute[Any, Any], Any] | None:
    """The hot route FastAPI serves `POST path` with and its validated path parameters; None
    if another route serves it, or if the route refuses the parameters."""
    scope = {"type": "http", "method": "POST", "path": path, "root_path": "", "headers": []}
    for route in iter_route_contexts(app.router.routes):
        match, child = route.matches(scope)
        if match is Match.FULL:
            hot = next((hot for hot in HOT_ROUTES if hot.path == route.path), None)
            if hot is None:
                return None
            values, errors = request_params_to_args(
                route.dependant.path_params, child["path_params"]
            )
            return None if errors else (hot, hot.parameters(**values))
    return None


def lane_choice(app: FastAPI, path: str) -> tuple[HotRoute[Any, Any], Any] | None:
    """The hot route the lane serves `POST path` with and its path parameters, if any."""
    return Express(app, HOT_ROUTES)._match("POST", path)


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("segment", SEGMENTS)
def test_the_lane_takes_exactly_the_paths_fastapi_serves_with_a_hot_route(
    app: FastAPI, template: str, segment: str
) -> None:
    """Names and window keys at the edges of their types: the lane answers a path exactly when
    FastAPI would serve it with a hot route and accept its parameters."""
    path = template.format(segment, segment)
    assert lane_choice(app, path) == fastapi_choice(app, path)


@settings(max_examples=300, deadline=None)
@given(segment=st.text(alphabet="aZ09._:+-/ é%\n", max_size=210))
def test_the_lane_and_fastapi_agree_on_any_path_segment(app: FastAPI, segment: str) -> None:
    """The same for any segment made of the characters that matter to the two types."""
    for template in ("/v1/leases/{}/acquire", "/v1/jobs/job/windows/{}/claim"):
        path = template.format(segment)
        assert lane_choice(app, path) == fastapi_choice(app, path)


def test_a_table_entry_must_name_the_template_s_parameters() -> None:
    """The named tuple of a route's path parameters is checked against its template."""
    with pytest.raises(ValueError, match="LeasePath"):
        HotRoute(
            "POST",
            "/v1/fences/{resource}/verify",
            LeasePath,
            AcquireRequest,
            HOT_ROUTES[0].action,
            AcquireRequest,
            (),
            "fences",
        )
