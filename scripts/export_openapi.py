"""Regenerate openapi/openapi.json from the app; tests/unit/test_openapi.py fails when stale."""

from __future__ import annotations

import sys
from pathlib import Path

from tenure_server.server.app import openapi_document

TARGET = Path(__file__).resolve().parent.parent / "openapi" / "openapi.json"

if __name__ == "__main__":
    TARGET.write_text(openapi_document(), encoding="utf-8")
    sys.stdout.write(f"wrote {TARGET}\n")
