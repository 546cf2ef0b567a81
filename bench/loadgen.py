"""An asyncio load client for the HTTP services, for what the wrk scripts do not drive: batch
renew, the paced renewals of the idle-cost measurement, and every workload when wrk is not
installed (the two-request ones with one latency per operation, as wrk_steps.lua). HTTP/1.1
over keep-alive connections, written by hand on uvloop streams so that the client spends as
little of the shared CPU as it can. Prints one Measurement as JSON.

    .venv/bin/python bench/loadgen.py --url http://127.0.0.1:8080 --workload cycle --connections 16
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import (
    BATCH_PREFIX,
    BATCH_SIZE,
    FENCE_LEASE,
    FENCE_RESOURCES,
    HOLDER,
    RENEW_POOL,
    RENEW_PREFIX,
    TTL_SECONDS,
    WINDOW_LEASE_PREFIX,
    batch_resources,
    summarize,
)

WORKLOADS = (
    "acquire",
    "renew",
    "release",
    "cycle",
    "claim_complete",
    "verify",
    "hot",
    "constant",
    "batch_renew",
    "batch_verify",
    "idle",
)


class Http:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads Content-Length answers. A
    connection the server drops is opened again; that request counts as failed (status 0)."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, host: str, port: int) -> Http:
        http = cls(host, port)
        await http._connect()
        return http

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)

    async def post(self, path: str, document: object) -> tuple[int, bytes]:
        return await self.post_json(path, json.dumps(document).encode())

    async def post_json(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST a body already encoded (a workload that sends the same one again and again)."""
        try:
            return await self._exchange(path, body)
        except (OSError, asyncio.IncompleteReadError):
            await self.close()
            await self._connect()
            return 0, b""

    async def _exchange(self, path: str, body: bytes) -> tuple[int, bytes]:
        assert self._reader is not None  # opened by open()
        assert self._writer is not None
        self._writer.write(
            b"POST %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
        )
        head = await self._reader.readuntil(b"\r\n\r\n")
        marker = head.lower().find(b"\r\ncontent-length:")
        if marker < 0:
            raise RuntimeError("the server answered without Content-Length")
        length = int(head[marker + 17 : head.index(b"\r\n", marker + 2)])
        return int(head[9:12]), await self._reader.readexactly(length)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with suppress(OSError):
                await self._writer.wait_closed()


@functools.cache
def _batch_body(worker: int) -> bytes:
    """A connection's batch renew: its own BATCH_SIZE leases, encoded once."""
    names = (f"{BATCH_PREFIX}{worker}-{k}" for k in range(BATCH_SIZE))
    leases = [{"name": name, "generation": 1} for name in names]
    return json.dumps({"holder": HOLDER, "ttl_seconds": TTL_SECONDS, "leases": leases}).encode()


@functools.cache
def _verify_body(worker: int) -> bytes:
    """A connection's batch verify: FENCE_LEASE on its own BATCH_SIZE resources, encoded once."""
    refs = [
        {"resource": resource, "lease": FENCE_LEASE, "generation": 1}
        for resource in batch_resources(worker)
    ]
    return json.dumps({"fences": refs}).encode()


# One operation on one connection: (connection, worker index, sequence number) -> succeeded;
# it returns how many operations it did (a batch renews many leases).
Step = Callable[[Http, int, int], Awaitable[int]]


def _batch(path: str, body: Callable[[int], bytes], done: bytes) -> Step:
    """A batch request per operation: counts the items of the answer that carry `done`."""

    async def step(http: Http, worker: int, _n: int) -> int:
        status, answer = await http.post_json(path, body(worker))
        return answer.count(done) if status == 200 else 0

    return step


def steps(prefix: str, grant: str | None = None) -> dict[str, Step]:
    """The workloads' operations; release names `grant`, that of the prefilled leases."""
    lease_body = {"holder": HOLDER, "ttl_seconds": TTL_SECONDS}

    async def acquire(http: Http, _w: int, _n: int) -> int:
        status, _ = await http.post(
            f"/v1/leases/{prefix}{random.randrange(10**9)}/acquire", lease_body
        )
        return status == 200

    async def renew(http: Http, _w: int, _n: int) -> int:
        name = f"{RENEW_PREFIX}0-{random.randrange(RENEW_POOL)}"
        body = {**lease_body, "generation": 1}
        return (await http.post(f"/v1/leases/{name}/renew", body))[0] == 200

    async def release(http: Http, worker: int, n: int) -> int:
        body = {"holder": HOLDER, "generation": 1, "grant": grant}
        return (await http.post(f"/v1/leases/{prefix}{worker}-{n}/release", body))[0] == 200

    async def cycle(http: Http, _w: int, _n: int) -> int:
        name = f"{prefix}{random.randrange(10**9)}"
        status, answer = await http.post(f"/v1/leases/{name}/acquire", lease_body)
        if status != 200:
            return 0
        acquired = json.loads(answer)
        body = {"holder": HOLDER, "generation": acquired["generation"], "grant": acquired["grant"]}
        return (await http.post(f"/v1/leases/{name}/release", body))[0] == 200

    async def claim_complete(http: Http, worker: int, n: int) -> int:
        path = f"/v1/jobs/cwjob-{worker}/windows/{prefix}{n}"
        body = {"holder": HOLDER, "lease": f"{WINDOW_LEASE_PREFIX}0-{worker}", "generation": 1}
        if (await http.post(path + "/claim", body))[0] != 200:
            return 0
        return (await http.post(path + "/complete", body))[0] == 200

    async def verify(http: Http, _w: int, _n: int) -> int:
        path = f"/v1/fences/fr-{random.randrange(FENCE_RESOURCES)}/verify"
        return (await http.post(path, {"lease": FENCE_LEASE, "generation": 1}))[0] == 200

    async def constant(http: Http, _w: int, _n: int) -> int:
        path = f"/v1/constant/{prefix}{random.randrange(10**9)}/acquire"
        return (await http.post(path, lease_body))[0] == 200

    async def hot(http: Http, _w: int, _n: int) -> int:
        return (await http.post(f"/v1/leases/hot-{prefix}/acquire", lease_body))[0] == 200

    return {
        "acquire": acquire,
        "renew": renew,
        "release": release,
        "cycle": cycle,
        "claim_complete": claim_complete,
        "verify": verify,
        "hot": hot,
        "constant": constant,
        # Each renewed lease, and only those (a lost one is a name and a generation), carries
        # its expiry; each accepted verify, and only those, its fence's `updated_at`: counted
        # without decoding the answer.
        "batch_renew": _batch("/v1/leases/renew", _batch_body, b'"expires_in_seconds"'),
        "batch_verify": _batch("/v1/fences/verify", _verify_body, b'"updated_at"'),
    }


async def _run(
    url: str, connections: int, seconds: float, work: Callable[[Http, int, float], Awaitable[None]]
) -> float:
    parts = urlsplit(url)
    opened = [await Http.open(parts.hostname or "", parts.port or 80) for _ in range(connections)]
    try:
        began = time.perf_counter()
        await asyncio.gather(*(work(h, i, began) for i, h in enumerate(opened)))
        return time.perf_counter() - began
    finally:
        await asyncio.gather(*(h.close() for h in opened))


async def measure(
    url: str, workload: str, connections: int, seconds: float, prefix: str, grant: str | None
) -> str:
    step = steps(prefix, grant)[workload]
    latencies: list[float] = []
    done = errors = 0

    async def loop(http: Http, worker: int, began: float) -> None:
        nonlocal done, errors
        n = 0
        while (started := time.perf_counter()) < began + seconds:
            count = await step(http, worker, n)
            latencies.append(time.perf_counter() - started)
            done, errors, n = done + count, errors + (count == 0), n + 1

    elapsed = await _run(url, connections, seconds, loop)
    result = summarize(latencies, elapsed, errors)
    # A batch request renews many leases: operations are leases, latency stays per request.
    return replace(result, ops=done).to_json()


async def paced_renewals(
    url: str, leases: int, every: float, connections: int, seconds: float, batch: int
) -> str:
    """Renew leases idle-0-<n> (n < leases), each every `every` seconds, spread evenly in time:
    one request per lease (batch 1), or one POST /v1/leases/renew per `batch` leases."""
    requests = max(1, leases // batch)
    interval = every / requests
    latencies: list[float] = []
    done = errors = 0

    async def renew(http: Http, slot: int) -> int:
        if batch == 1:
            body = {"holder": HOLDER, "generation": 1, "ttl_seconds": TTL_SECONDS}
            status, _ = await http.post(f"/v1/leases/idle-0-{slot % leases}/renew", body)
            return int(status == 200)
        first = (slot % requests) * batch
        refs = [{"name": f"idle-0-{n}", "generation": 1} for n in range(first, first + batch)]
        body = {"holder": HOLDER, "ttl_seconds": TTL_SECONDS, "leases": refs}
        status, answer = await http.post("/v1/leases/renew", body)
        return len(json.loads(answer)["renewed"]) if status == 200 else 0

    async def worker(http: Http, index: int, began: float) -> None:
        nonlocal done, errors
        slot = index
        while (due := began + slot * interval) < began + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            started = time.perf_counter()
            count = await renew(http, slot)
            latencies.append(time.perf_counter() - started)
            done, errors, slot = done + count, errors + (count == 0), slot + connections

    elapsed = await _run(url, connections, seconds, worker)
    return replace(summarize(latencies, elapsed, errors), ops=done).to_json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--workload", choices=WORKLOADS, required=True)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--prefix", default="lg-", help="name prefix for fresh names")
    parser.add_argument("--grant", help="release: the grant of the prefilled leases")
    parser.add_argument("--leases", type=int, default=10_000, help="idle: leases held")
    parser.add_argument("--renew-every", type=float, default=30.0, help="idle: seconds")
    parser.add_argument("--batch", type=int, default=1, help="idle: leases per renew request")
    a = parser.parse_args()
    if a.workload == "release" and a.grant is None:
        parser.error("release needs --grant")
    if a.workload == "idle":
        job = paced_renewals(a.url, a.leases, a.renew_every, a.connections, a.seconds, a.batch)
    else:
        job = measure(a.url, a.workload, a.connections, a.seconds, a.prefix, a.grant)
    print(uvloop.run(job))


if __name__ == "__main__":
    main()
