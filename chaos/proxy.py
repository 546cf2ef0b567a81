"""An asyncio TCP proxy on loopback, in a thread with its own event loop, that the nemesis can
disturb: add delay (each direction on its own), stop forwarding (a black hole), reset every
connection (RST), and reset new connections as they arrive. It is also a floating address:
`retarget` moves it to another server, as an HA manager moves a virtual IP after a failover.

    proxy = Proxy(target_port=5432, seed=1)
    port = proxy.start()                # the service connects to 127.0.0.1:port
    proxy.set_delay(upstream=0.05, downstream=0.2, jitter=0.1)
    proxy.blackhole(True)               # bytes are held, nothing arrives
    proxy.retarget(5433)                # new connections go to 127.0.0.1:5433
    proxy.heal()                        # no delay, forwarding; held connections are reset
    proxy.stop()

Bytes are never dropped or reordered inside a connection (that would corrupt the protocol, not
model a network): a "drop" is a black hole that ends with the connections reset, as a partition
that heals looks to both ends. Every control method may be called from any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import threading
from dataclasses import dataclass

CHUNK = 65536
START_TIMEOUT = 10.0


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0), not FIN: the peer sees "connection reset"."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@dataclass
class _Delay:
    upstream: float = 0.0  # client -> target
    downstream: float = 0.0  # target -> client
    jitter: float = 0.0


class _Link:
    """One client connection and its connection to the target."""

    def __init__(self, proxy: Proxy, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.proxy = proxy
        self.client = (reader, writer)
        self.writers: list[asyncio.StreamWriter] = [writer]

    async def run(self) -> None:
        try:
            target = await asyncio.open_connection("127.0.0.1", self.proxy.target_port)
        except OSError:
            _reset(self.client[1])
            return
        self.writers.append(target[1])
        pumps = [
            asyncio.create_task(self._pump(self.client[0], target[1], upstream=True)),
            asyncio.create_task(self._pump(target[0], self.client[1], upstream=False)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        self.close()

    def close(self) -> None:
        for writer in self.writers:
            writer.transport.abort() if writer.transport.is_closing() else writer.close()

    def reset(self) -> None:
        for writer in self.writers:
            _reset(writer)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()
        deliver = asyncio.create_task(self._deliver(queue, writer))
        loop = asyncio.get_running_loop()
        last = 0.0
        try:
            while True:
                chunk = await reader.read(CHUNK)
                last = max(loop.time() + self.proxy.delay_of(upstream=upstream), last)
                queue.put_nowait((last, chunk))
                if not chunk:
                    break
            await deliver
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            deliver.cancel()

    async def _deliver(
        self, queue: asyncio.Queue[tuple[float, bytes]], writer: asyncio.StreamWriter
    ) -> None:
        loop = asyncio.get_running_loop()
        while True:
            at, chunk = await queue.get()
            if at > loop.time():
                await asyncio.sleep(at - loop.time())
            await self.proxy.forwarding.wait()
            if not chunk:
                return
            writer.write(chunk)
            await writer.drain()


class Proxy:
    """A loopback TCP proxy to `target_port`; see the module docstring."""

    def __init__(self, target_port: int, *, seed: int = 0) -> None:
        self.target_port = target_port
        self.port = 0
        self._random = random.Random(seed)  # noqa: S311 - seeded jitter, reproducible, no secret
        self._delay = _Delay()
        self._refusing = False
        self._links: set[_Link] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stopped = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-proxy", daemon=True)
        self.forwarding = asyncio.Event()
        self.accepted = 0

    # Life cycle --------------------------------------------------------------------------------

    def start(self) -> int:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise RuntimeError("the proxy did not start")
        return self.port

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(START_TIMEOUT)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.run_until_complete(self._cancel_the_rest())
        self._loop.close()

    @staticmethod
    async def _cancel_the_rest() -> None:
        """Cancel the links still pumping, so none is destroyed pending when the loop closes."""
        rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        if rest:
            await asyncio.wait(rest, timeout=START_TIMEOUT)

    async def _serve(self) -> None:
        self.forwarding.set()
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stopped.wait()
        server.close()
        for link in list(self._links):
            link.reset()
        await asyncio.sleep(0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self._refusing:
            _reset(writer)
            return
        link = _Link(self, reader, writer)
        self._links.add(link)
        try:
            await link.run()
        finally:
            self._links.discard(link)

    # Faults ------------------------------------------------------------------------------------

    def delay_of(self, *, upstream: bool) -> float:
        delay = self._delay
        base = delay.upstream if upstream else delay.downstream
        if base <= 0 and delay.jitter <= 0:
            return 0.0
        return base + self._random.uniform(0, delay.jitter)

    def set_delay(
        self, upstream: float = 0.0, downstream: float = 0.0, jitter: float = 0.0
    ) -> None:
        """Hold every chunk this long (plus up to `jitter`) before forwarding it, in order."""
        self._delay = _Delay(upstream, downstream, jitter)

    def blackhole(self, on: bool) -> None:
        """Stop (or resume) forwarding: bytes are held, and arrive when it is turned off. Returns
        once it is in effect, so the caller knows what is sent afterwards is held."""
        applied = threading.Event()

        def apply() -> None:
            self.forwarding.clear() if on else self.forwarding.set()
            applied.set()

        self._loop.call_soon_threadsafe(apply)
        applied.wait(START_TIMEOUT)

    def retarget(self, port: int) -> None:
        """Lead new connections to `port`; the open ones, to the old server, are reset."""
        self.target_port = port
        self.reset()

    def refuse(self, on: bool) -> None:
        """Reset new connections as soon as they are accepted."""
        self._refusing = on

    def reset(self) -> None:
        """Reset (RST) every open connection, both ends."""
        self._loop.call_soon_threadsafe(self._reset_all)

    def _reset_all(self) -> None:
        for link in list(self._links):
            link.reset()

    def heal(self) -> None:
        """Back to a plain proxy. Connections held in a black hole are reset, not released: a
        partition that heals finds its connections dead at both ends."""
        held = not self.forwarding.is_set()
        self._delay = _Delay()
        self._refusing = False
        if held:
            self._loop.call_soon_threadsafe(self._reset_then_forward)

    def _reset_then_forward(self) -> None:
        self._reset_all()
        self.forwarding.set()

    @property
    def connections(self) -> int:
        return len(self._links)
