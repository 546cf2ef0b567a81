"""The hot routes, declared once. Each entry of `HOT_ROUTES` (method, path template, path
parameters, body model, action; a batch route's cheaper decoder) becomes a FastAPI route
(`router`: the OpenAPI document, every refusal) and a lane of the express path (api/express.py),
which compiles its matcher from the same template and validates the path parameters with the
same types. Nothing is written twice, so the two cannot drift apart (they once did: window keys
"." and "..").

The action is the route's operation: its name and docstring become the operationId, summary and
description, as a FastAPI route function's do."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, get_type_hints

from fastapi import APIRouter, Request
from pydantic import BaseModel, TypeAdapter
from starlette.responses import Response
from starlette.routing import compile_path
from starlette.types import Receive

from tenure_server.api import fences, leases, windows
from tenure_server.api.batch_bodies import (
    RenewManyBody,
    VerifyManyBody,
    decode_renew_many,
    decode_verify_many,
)
from tenure_server.api.dependencies import Context, ContextDep
from tenure_server.api.paths import LeasePath, NoPath, ResourcePath, WindowPath
from tenure_server.api.schemas import (
    AcquireRequest,
    FenceOut,
    LeaseOut,
    ReleaseRequest,
    RenewManyRequest,
    RenewManyResult,
    RenewRequest,
    VerifyManyRequest,
    VerifyManyResult,
    VerifyRequest,
    WindowOut,
    WindowRequest,
    problem_responses,
)

# The path parameters: a named tuple of strings (api/paths.py).
PathT = TypeVar("PathT", bound=tuple[str, ...])
# The body as the action reads it: the route's pydantic model, or a protocol both it and the
# lane's cheaper decoding of it implement (api/batch_bodies.py).
BodyT = TypeVar("BodyT")

# A hot route's work: the caller's context, the path parameters and the body in, the answer out.
# It also gets the request's `receive`: an acquire that waits watches it for the client leaving.
Action = Callable[[Context, PathT, BodyT, Receive], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class HotRoute(Generic[PathT, BodyT]):
    """One hot route. `parameters` is a named tuple (api/paths.py) whose fields are the path
    template's parameters, in order, typed as FastAPI validates them; `answers` is the model the
    OpenAPI document shows for a success, `problems` its problem statuses beyond the usual.
    `decode`, when given, is the lane's cheaper reading of a JSON body: the body, or None where
    it is not sure that `body` would accept it alike (the lane then validates with `body`)."""

    method: str
    path: str
    parameters: type[PathT]
    body: type[BodyT]
    action: Action[PathT, BodyT]
    answers: type[BaseModel]
    problems: tuple[int, ...]
    tag: str
    decode: Callable[[bytes], BodyT | None] | None = None
    # Each path parameter's name and `Annotated` type, in the template's order.
    path_types: dict[str, Any] = field(init=False, repr=False, compare=False)
    # Those types as one tuple type, validated in one pass by its core validator: cheaper than
    # pydantic's validation of the named tuple, which every lane request would pay
    # (bench/README.md, step 19).
    _path_values: TypeAdapter[tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        types = get_type_hints(self.parameters, include_extras=True)
        in_template = tuple(compile_path(self.path)[2])
        if in_template != tuple(types):
            raise ValueError(
                f"{self.path} has the parameters {in_template}: "
                f"{self.parameters.__name__} must have these fields, in this order"
            )
        object.__setattr__(self, "path_types", types)
        values: Any = tuple.__class_getitem__(tuple(types.values()))
        object.__setattr__(self, "_path_values", TypeAdapter[tuple[str, ...]](values))

    def path_of(self, values: Sequence[str]) -> PathT:
        """The path parameters, from their text in the template's order, each validated as
        FastAPI validates it; pydantic's ValidationError if one is refused."""
        # What the named tuple's `_make` does, once the values are known to be one per field.
        return tuple.__new__(self.parameters, self._path_values.validator.validate_python(values))


class _Endpoint(Generic[PathT, BodyT]):
    """A hot route as FastAPI sees an endpoint function: FastAPI reads the parameters to resolve
    from `__signature__` (each path parameter with its type, the body, the request and the
    context dependency), and the operation's name and description from the action."""

    def __init__(self, route: HotRoute[PathT, BodyT]) -> None:
        self.route = route
        self.__name__ = route.action.__name__
        self.__doc__ = route.action.__doc__
        keyword = inspect.Parameter.KEYWORD_ONLY
        self.__signature__ = inspect.Signature(
            [
                *(
                    inspect.Parameter(name, keyword, annotation=type_)
                    for name, type_ in route.path_types.items()
                ),
                inspect.Parameter("body", keyword, annotation=route.body),
                inspect.Parameter("request", keyword, annotation=Request),
                inspect.Parameter("context", keyword, annotation=ContextDep),
            ]
        )

    async def __call__(
        self, *, body: BodyT, request: Request, context: Context, **path: str
    ) -> Response:
        # FastAPI has validated each path parameter with its type: only their order is wanted.
        values = tuple.__new__(
            self.route.parameters, [path[name] for name in self.route.path_types]
        )
        return await self.route.action(context, values, body, request.receive)


def router(routes: Iterable[HotRoute[Any, Any]]) -> APIRouter:
    """FastAPI routes for `routes`, in their order: include it before every other router, so that
    FastAPI tries the routes in the order the express lane does (and the hot ones first, which
    saves FastAPI's route matching on every hot request)."""
    hot = APIRouter()
    for route in routes:
        hot.add_api_route(
            route.path,
            _Endpoint(route),
            methods=[route.method],
            response_model=route.answers,
            responses=problem_responses(*route.problems),
            tags=[route.tag],
        )
    return hot


# The batch routes read their bodies through a protocol (api/batch_bodies.py) that the model
# and the lane's cheaper decoding both implement: declared, since the model alone would be
# inferred. (A subscripted HotRoute cannot be called: the dataclass has slots.)
_RENEW_MANY: HotRoute[NoPath, RenewManyBody] = HotRoute(
    "POST",
    "/v1/leases/renew",
    NoPath,
    RenewManyRequest,
    leases.renew_many,
    RenewManyResult,
    (401, 403),
    "leases",
    decode_renew_many,
)
_VERIFY_MANY: HotRoute[NoPath, VerifyManyBody] = HotRoute(
    "POST",
    "/v1/fences/verify",
    NoPath,
    VerifyManyRequest,
    fences.verify_many,
    VerifyManyResult,
    (401, 403),
    "fences",
    decode_verify_many,
)

HOT_ROUTES = (
    HotRoute(
        "POST",
        "/v1/leases/{name}/acquire",
        LeasePath,
        AcquireRequest,
        leases.acquire,
        LeaseOut,
        (401, 403, 409),
        "leases",
    ),
    HotRoute(
        "POST",
        "/v1/leases/{name}/renew",
        LeasePath,
        RenewRequest,
        leases.renew,
        LeaseOut,
        (401, 403, 409),
        "leases",
    ),
    _RENEW_MANY,
    HotRoute(
        "POST",
        "/v1/leases/{name}/release",
        LeasePath,
        ReleaseRequest,
        leases.release,
        LeaseOut,
        (401, 403, 404, 409),
        "leases",
    ),
    HotRoute(
        "POST",
        "/v1/fences/{resource}/verify",
        ResourcePath,
        VerifyRequest,
        fences.verify,
        FenceOut,
        (401, 403, 409),
        "fences",
    ),
    _VERIFY_MANY,
    HotRoute(
        "POST",
        "/v1/jobs/{job}/windows/{window}/claim",
        WindowPath,
        WindowRequest,
        windows.claim,
        WindowOut,
        (401, 403, 409),
        "windows",
    ),
    HotRoute(
        "POST",
        "/v1/jobs/{job}/windows/{window}/complete",
        WindowPath,
        WindowRequest,
        windows.complete,
        WindowOut,
        (401, 403, 409),
        "windows",
    ),
)
