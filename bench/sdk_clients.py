"""The child side of the SDK workload (sdk_cycles.py): one client's acquire→release cycles on
fresh names from this process for one window, printed as one JSON line. The SDK async on
uvloop and sync on threads; without the SDK, httpx over each client's transport (httpx-aiohttp,
pyreqwest's) and each transport bare (aiohttp, pyreqwest); and redis.asyncio (SET NX PX, then a
Lua compare-and-delete).

    .venv/bin/python bench/sdk_clients.py CLIENT URL --tasks 16 --seconds 2 --prefix sdk-

The CPU is the whole process's (all its threads), over the window only: warm-up excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

TTL_SECONDS = 60.0
WARM_UP_CYCLES = 3  # per task, before the window: connections open, caches filled
# client -> what it is; each SDK client's figures are judged against its TRANSPORTS' in the
# same run (httpx over the same transport, then that transport bare).
CLIENTS = {
    "async": "`AsyncTenure` (SDK), tasks",
    "sync": "`Tenure` (SDK), threads",
    "httpx": "httpx over the SDK's transport, no SDK",
    "aiohttp": "bare aiohttp, no SDK",
    "httpx-sync": "httpx (sync) over the SDK's transport, no SDK, threads",
    "reqwest": "bare pyreqwest (sync), no SDK, threads",
    "redis-always": "redis.asyncio, AOF `always`",
    "redis-everysec": "redis.asyncio, AOF `everysec`",
}
TRANSPORTS = {"async": ("httpx", "aiohttp"), "sync": ("httpx-sync", "reqwest")}


@dataclass(frozen=True)
class Figure:
    """One child's window: cycles completed, wall and CPU seconds, failed cycles."""

    client: str
    tasks: int
    cycles: int
    seconds: float
    cpu_seconds: float
    errors: int

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_request(self) -> float:
        return self.cpu_seconds / (2 * self.cycles) * 1e6 if self.cycles else float("nan")


Cycle = Callable[[str], Awaitable[None]]


async def _drive(client: str, cycle: Cycle, tasks: int, seconds: float, prefix: str) -> Figure:
    errors = 0

    async def warm(task: int) -> None:
        for n in range(WARM_UP_CYCLES):
            await cycle(f"{prefix}w{task}-{n}")

    async def loop(task: int, deadline: float) -> int:
        nonlocal errors
        done = 0
        while time.monotonic() < deadline:
            try:
                await cycle(f"{prefix}{task}-{done}")
            except Exception:  # counted, and the loop goes on: a figure, not a test
                errors += 1
            done += 1
        return done

    await asyncio.gather(*(warm(task) for task in range(tasks)))
    cpu, began = time.process_time(), time.monotonic()
    done = await asyncio.gather(*(loop(task, began + seconds) for task in range(tasks)))
    elapsed, cpu = time.monotonic() - began, time.process_time() - cpu
    return Figure(client, tasks, sum(done) - errors, elapsed, cpu, errors)


def _drive_threads(
    client: str, cycle: Callable[[str], None], tasks: int, seconds: float, prefix: str
) -> Figure:
    errors = [0] * tasks

    def warm(task: int) -> None:
        for n in range(WARM_UP_CYCLES):
            cycle(f"{prefix}w{task}-{n}")

    def loop(task: int, deadline: float) -> int:
        done = 0
        while time.monotonic() < deadline:
            try:
                cycle(f"{prefix}{task}-{done}")
            except Exception:  # counted, and the loop goes on
                errors[task] += 1
            done += 1
        return done

    with ThreadPoolExecutor(max_workers=tasks) as pool:
        list(pool.map(warm, range(tasks)))
        cpu, began = time.process_time(), time.monotonic()
        done = list(pool.map(loop, range(tasks), [began + seconds] * tasks))
        elapsed, cpu = time.monotonic() - began, time.process_time() - cpu
    return Figure(client, tasks, sum(done) - sum(errors), elapsed, cpu, sum(errors))


async def _sdk_async(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    from tenure import AsyncTenure

    async with AsyncTenure(url) as client:

        async def cycle(name: str) -> None:
            await client.release(await client.acquire(name, TTL_SECONDS))

        return await _drive("async", cycle, tasks, seconds, prefix)


def _sdk_sync(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    from tenure import Tenure

    with Tenure(url) as client:

        def cycle(name: str) -> None:
            client.release(client.acquire(name, TTL_SECONDS))

        return _drive_threads("sync", cycle, tasks, seconds, prefix)


def _lease_body(answer: dict[str, Any]) -> dict[str, Any]:
    return {"holder": "bench", "generation": answer["generation"], "grant": answer["grant"]}


async def _httpx(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    import httpx
    from httpx_aiohttp import AiohttpTransport

    transport = AiohttpTransport(limits=httpx.Limits(max_connections=None))
    async with httpx.AsyncClient(base_url=url, transport=transport) as http:

        async def cycle(name: str) -> None:
            body = {"holder": "bench", "ttl_seconds": TTL_SECONDS}
            answer = await http.post(f"/v1/leases/{name}/acquire", json=body)
            answer.raise_for_status()
            done = await http.post(f"/v1/leases/{name}/release", json=_lease_body(answer.json()))
            done.raise_for_status()

        return await _drive("httpx", cycle, tasks, seconds, prefix)


async def _aiohttp(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    import aiohttp

    async with aiohttp.ClientSession(url, raise_for_status=True) as http:

        async def cycle(name: str) -> None:
            body = {"holder": "bench", "ttl_seconds": TTL_SECONDS}
            async with http.post(f"/v1/leases/{name}/acquire", json=body) as answer:
                lease = await answer.json()
            async with http.post(f"/v1/leases/{name}/release", json=_lease_body(lease)) as done:
                await done.read()

        return await _drive("aiohttp", cycle, tasks, seconds, prefix)


def _httpx_sync(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    import httpx
    from pyreqwest.client import SyncClientBuilder
    from pyreqwest.compatibility.httpx import SyncHttpxTransport

    transport = SyncHttpxTransport(SyncClientBuilder().build())
    with httpx.Client(base_url=url, transport=transport) as http:

        def cycle(name: str) -> None:
            body = {"holder": "bench", "ttl_seconds": TTL_SECONDS}
            answer = http.post(f"/v1/leases/{name}/acquire", json=body)
            answer.raise_for_status()
            done = http.post(f"/v1/leases/{name}/release", json=_lease_body(answer.json()))
            done.raise_for_status()

        return _drive_threads("httpx-sync", cycle, tasks, seconds, prefix)


def _reqwest(url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    from pyreqwest.client import SyncClientBuilder

    with SyncClientBuilder().base_url(url).error_for_status(True).build() as http:

        def cycle(name: str) -> None:
            body = {"holder": "bench", "ttl_seconds": TTL_SECONDS}
            answer = http.post(f"/v1/leases/{name}/acquire").body_json(body).build().send()
            release = http.post(f"/v1/leases/{name}/release")
            release.body_json(_lease_body(answer.json())).build().send().bytes()

        return _drive_threads("reqwest", cycle, tasks, seconds, prefix)


# Releases only the holding it names (the value SET stored): what a lease release must be.
RELEASE_SCRIPT = """
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end
return 0
"""


async def _redis(client: str, url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    import redis.asyncio

    connection = redis.asyncio.Redis.from_url(url)
    release = connection.register_script(RELEASE_SCRIPT)
    try:

        async def cycle(name: str) -> None:
            token = f"bench:{name}"
            if not await connection.set(name, token, nx=True, px=int(TTL_SECONDS * 1000)):
                raise RuntimeError(f"{name} is held")
            if not await release(keys=[name], args=[token]):
                raise RuntimeError(f"{name} was not released")

        return await _drive(client, cycle, tasks, seconds, prefix)
    finally:
        await connection.aclose()


def one(client: str, url: str, tasks: int, seconds: float, prefix: str) -> Figure:
    """One client's window, in this process (the child's body)."""
    threaded = {"sync": _sdk_sync, "httpx-sync": _httpx_sync, "reqwest": _reqwest}
    if client in threaded:
        return threaded[client](url, tasks, seconds, prefix)
    import uvloop

    coroutines = {"async": _sdk_async, "httpx": _httpx, "aiohttp": _aiohttp}
    if client in coroutines:
        return uvloop.run(coroutines[client](url, tasks, seconds, prefix))
    return uvloop.run(_redis(client, url, tasks, seconds, prefix))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("client", choices=list(CLIENTS))
    parser.add_argument("url")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--prefix", default="sdk-")
    options = parser.parse_args()
    figure = one(options.client, options.url, options.tasks, options.seconds, options.prefix)
    print(json.dumps(asdict(figure)))


if __name__ == "__main__":
    main()
