"""The FencingMiddleware answers the table of cases the Node.js middleware is tested with too
(tests/shared/fencing_middleware_cases.json): same refusals, types, statuses and facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenure._fencing import MemoryFenceStore
from tenure._middleware import FencingMiddleware, Receive, Scope, Send

CASES = json.loads(
    (Path(__file__).parents[1] / "shared" / "fencing_middleware_cases.json").read_text("utf-8")
)["cases"]


class App:
    """Answers 200; counts its runs."""

    def __init__(self) -> None:
        self.runs = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.runs += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["name"])
async def test_the_shared_cases(case: dict[str, Any]) -> None:
    """Each request of the case, in order on one memory store, gets its status, and a refusal
    its problem type and facts; the app runs for accepted requests only."""
    app = App()
    middleware = FencingMiddleware(app, store=MemoryFenceStore())
    transport = httpx.ASGITransport(app=middleware)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for step in case["requests"]:
            headers = [("Fencing-Token", token) for token in step["tokens"]]
            response = await http.request(step["method"], step["path"], headers=headers)
            assert response.status_code == step["status"], step
            if step["status"] == 200:
                continue
            assert response.headers["content-type"] == "application/problem+json"
            problem = response.json()
            assert problem["type"] == "/problems/" + step["type"]
            assert problem["status"] == step["status"]
            assert problem.items() >= step.get("facts", {}).items()
    assert app.runs == sum(step["status"] == 200 for step in case["requests"])
