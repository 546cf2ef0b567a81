"""The browser tests' app on a real loopback port."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn
from fastapi import FastAPI


@pytest.fixture
async def served(app: FastAPI) -> AsyncIterator[str]:
    """The test's app (lifespan already running) on a real loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_level="warning", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(1000):  # up to 10 s
        if server.started:
            break
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task
    sock.close()
