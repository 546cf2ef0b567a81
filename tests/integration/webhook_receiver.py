"""A tiny HTTP server on loopback that records the webhooks it receives."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    status: int


@dataclass
class Receiver:
    url: str
    # Paths that answer 500 this many more times before answering 204.
    failures: dict[str, int] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def at(self, path: str, *, ok: bool = True) -> list[dict[str, Any]]:
        """Bodies received on `path` (only those answered with success when `ok`)."""
        with self.lock:
            return [
                item.body
                for item in self.received
                if item.path == path and (not ok or item.status < 300)
            ]


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with receiver.lock:
                left = receiver.failures.get(self.path, 0)
                status = 500 if left > 0 else 204
                if left > 0:
                    receiver.failures[self.path] = left - 1
                receiver.received.append(Received(self.path, body, status))
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
