"""The committed API contract matches the app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tenure import MAX_GENERATION
from tenure_server.server.app import openapi_document

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_committed_openapi_document_is_current() -> None:
    """openapi/openapi.json equals what the app generates (run scripts/export_openapi.py)."""
    assert COMMITTED.read_text(encoding="utf-8") == openapi_document()


def test_every_generation_a_request_takes_is_bounded_by_the_json_integer_max_generation() -> None:
    """Each request schema's `generation` states `maximum` 9007199254740991 as a JSON integer
    (never a float such as 9.223372036854776e+18), so readers in every language take the bound
    exactly; bounds of non-integer schemas stay as they are."""
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    schemas: dict[str, Any] = document["components"]["schemas"]
    bounded = {
        name: schema["properties"]["generation"]
        for name, schema in schemas.items()
        if "maximum" in schema.get("properties", {}).get("generation", {})
    }
    assert set(bounded) >= {"RenewRequest", "ReleaseRequest", "VerifyRequest", "FenceRef"}
    for generation in bounded.values():
        assert generation["type"] == "integer"
        assert type(generation["maximum"]) is int
        assert generation["maximum"] == MAX_GENERATION == 9007199254740991
        assert type(generation["minimum"]) is int
    assert '"maximum": 9007199254740991,' in COMMITTED.read_text(encoding="utf-8")
    number = schemas["AcquireRequest"]["properties"]["ttl_seconds"]
    assert (number["type"], number["exclusiveMinimum"]) == ("number", 0.0)
    assert type(number["exclusiveMinimum"]) is float
