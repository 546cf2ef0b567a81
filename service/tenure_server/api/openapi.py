"""The OpenAPI document as readers in every language take it: the bounds of an integer are JSON
integers.

FastAPI validates the document through its OpenAPI model, whose `maximum` and `minimum` are
floats, so `le=9007199254740991` would be written `9007199254740991.0` (and 2**63 - 1 as
9.223372036854776e+18, a different number). A generator that reads the bound as a double, or
refuses a float where an integer schema needs one, would then get it wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

__all__ = ["integer_bounds", "with_integer_bounds"]

_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def integer_bounds(node: Any) -> Any:
    """`node` with the bounds of each integer schema in it written as integers."""
    if isinstance(node, list):
        return [integer_bounds(item) for item in node]
    if not isinstance(node, dict):
        return node
    integral = node.get("type") == "integer"
    return {
        key: int(value)
        if integral and key in _BOUNDS and isinstance(value, float) and value.is_integer()
        else integer_bounds(value)
        for key, value in node.items()
    }


def with_integer_bounds(app: FastAPI) -> None:
    """Make `app.openapi()` (what /openapi.json serves, and openapi/openapi.json holds) write
    integer bounds as integers; generated once, on first use, as FastAPI's own."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = integer_bounds(generate())
        return app.openapi_schema

    # FastAPI's documented way to change the document: replace the app's `openapi` method.
    app.openapi = openapi  # type: ignore[method-assign]
