"""The Node.js client's own checks and suites (scripts/test-node: tsc --checkJs, the .d.ts
check, `node --test` against `tenure serve` on this test's database)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import BIN, tenure_service

ROOT = Path(__file__).parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="Node.js 18+ and npm are needed for the Node.js client",
    ),
]


@pytest.mark.timeout(300)
def test_the_node_client_suites_pass(database_url: str) -> None:
    """Every Node.js suite passes against the real service: leases, withLease, runOnce races,
    a paused holder fenced off, exact generations, the middleware on node:http, Express and
    Fastify, the daily-close example, and requests and answers valid against the OpenAPI
    document."""
    with tenure_service(database_url=database_url, TENURE_POOL_MIN_SIZE="1") as service:
        env = {
            **os.environ,
            "TENURE_TEST_URL": service.url,
            "TENURE_TEST_SETTINGS": json.dumps({"TENURE_DATABASE_URL": database_url}),
            "TENURE_BIN": str(BIN / "tenure"),
        }
        result = subprocess.run(
            [str(ROOT / "scripts" / "test-node")],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
