"""The committed API contract matches the app."""

from __future__ import annotations

from pathlib import Path

from tenure_server.server.app import openapi_document

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"


def test_committed_openapi_document_is_current() -> None:
    """openapi/openapi.json equals what the app generates (run scripts/export_openapi.py)."""
    assert COMMITTED.read_text(encoding="utf-8") == openapi_document()
