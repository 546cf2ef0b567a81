"""The service in this process over a real loopback socket, for tests that need real HTTP but
not a process of its own (`tests.support.processes.tenure_service` starts `tenure serve` itself):

    LiveService(settings)       `create_app` behind uvicorn in a thread with its own event loop,
                                for synchronous tests and the SDKs (the `service`,
                                `start_service` and `service_url` fixtures of tests/conftest.py),
                                over the HTTP protocol `tenure serve` uses (server/transport.py)
    Proxy(port)                 a TCP proxy in front of it that can stop forwarding: a network
                                fault injected on the real path (the `proxy` fixture); with
                                `tls=`, the service over https (the `https_proxy` fixture)

An app behind uvicorn as a task of the test's own event loop (for async tests: the event stream,
/ui's browser tests) is `tests.support.event_streams.served`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable

import uvicorn

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings
from tenure_server.server.tracing import Tracing
from tenure_server.server.transport import RoundHttpToolsProtocol

STARTUP_TIMEOUT = 15.0


class LiveService:
    """`create_app(settings, tracing)` served by uvicorn in a thread with its own event loop,
    over the HTTP protocol `tenure serve` uses."""

    def __init__(self, settings: Settings, tracing: Tracing | None = None) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings, tracing),
            loop="asyncio",
            http=RoundHttpToolsProtocol,
            ws="none",
            log_level="warning",
            lifespan="on",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(STARTUP_TIMEOUT)
        self._socket.close()


class Proxy:
    """A TCP proxy to the service. `blackhole()` makes it swallow every byte in both directions
    (requests get no answer, as behind a dead link); `restore()` forwards again. Given a server
    context (`tls=`), it ends TLS in front of the service, as a load balancer does."""

    def __init__(self, target_port: int, *, tls: ssl.SSLContext | None = None) -> None:
        self._target_port = target_port
        self._tls = tls
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self.port = 0
        self.received = bytearray()
        self.connections = 0  # accepted from clients so far
        self._clients: list[asyncio.StreamWriter] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"{'http' if self._tls is None else 'https'}://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(STARTUP_TIMEOUT):
            raise RuntimeError("the proxy did not start")

    def blackhole(self) -> None:
        self._forwarding.clear()

    def restore(self) -> None:
        self._forwarding.set()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STARTUP_TIMEOUT)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, ssl=self._tls)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._server.close()
        for writer in self._clients:  # no TLS close_notify awaited from clients that are gone
            writer.transport.abort()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._clients.append(writer)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self._target_port
            )
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pump(reader, upstream_writer, record=True),
            self._pump(upstream_reader, writer, record=False),
            return_exceptions=True,
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, record: bool
    ) -> None:
        try:
            while chunk := await reader.read(65536):
                if not self._forwarding.is_set():
                    continue
                if record:
                    self.received.extend(chunk)
                writer.write(chunk)
                await writer.drain()
        finally:
            writer.close()


# `start_service(**settings)`: the `start_service` fixture, which starts a LiveService with those
# settings on the test's database.
StartService = Callable[..., LiveService]
