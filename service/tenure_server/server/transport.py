"""The HTTP/1.1 protocol `tenure serve` runs under uvicorn: uvicorn's httptools protocol, whose
writes made in one round of the event loop leave the process in one send.

uvicorn writes a response's head when the app starts the response and its body when the app
sends it: two sends, and on loopback two wake-ups of the reader, for every answer. The status
line, headers and body of a Tenure answer are all sent in the same round, so holding the
writes until the end of that round joins them: more acquires per second for less service CPU
each (bench/README.md, step 13).

It relies on uvicorn's protocol keeping the transport `connection_made` gives it and calling
only the transport methods defined here; pyproject.toml pins uvicorn's minor version, and
tests/unit/test_transport.py checks both against the installed uvicorn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# Held bytes past which a write leaves at once: a streamed body that does not yield to the
# event loop must reach the socket's own buffer, whose limits pause the app (flow control).
FLUSH_BYTES = 64 * 1024


class _RoundTransport(asyncio.Transport):
    """A transport whose writes wait for the end of the event loop's round, then leave as one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(extra=None)
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(bytes(data))
        self._held_bytes += len(data)
        if self._held_bytes >= FLUSH_BYTES:
            self._flush()

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        if not self._held:
            return
        data = b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held.clear()
        self._held_bytes = 0
        self._transport.abort()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + self._held_bytes

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()


class RoundHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a `_RoundTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_RoundTransport(transport, asyncio.get_running_loop()))
