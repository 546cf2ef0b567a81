"""The service's own CPU per request on a hot route, in one process: the ASGI app `create_app`
builds (RequestEdge, the express lane or FastAPI, the route's action, the repository and
asyncpg) driven directly, without HTTP parsing or sockets, against a real PostgreSQL in a
throw-away database (bench/database.py: the embedded server, or one given by URL).
What the service's Python spends per request is the figure that decides how far the service is
from raw asyncpg; PostgreSQL's CPU in the same rounds (its server's process tree, when it runs on
this machine: on a shared server other databases' work is counted too) is printed beside it, as
what coalescing saves the database shows there.

    .venv/bin/python bench/http_cost.py --database-url postgresql://postgres@127.0.0.1/test \
        --workloads batch_verify batch_renew --rounds 7 --requests 200

Prints, per workload, the best round's CPU µs per request (and per item for a batch), and
PostgreSQL's median round."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
import uvloop
from cpu import CpuMeter
from database import bench_database, postmaster_pid, prefill
from tests.support.lifespan import running
from workloads import (
    BATCH_CONNECTIONS,
    BATCH_PREFIX,
    BATCH_SIZE,
    FENCE_LEASE,
    HOLDER,
    TTL_SECONDS,
    batch_resources,
)

from tenure_server.server.app import create_app
from tenure_server.server.settings import Settings

# (method path, body) for request number n of a connection.
Request = Callable[[int, int], tuple[str, bytes]]


@functools.cache
def _verify_batch(worker: int, _: int) -> tuple[str, bytes]:
    refs = [{"resource": r, "lease": FENCE_LEASE, "generation": 1} for r in batch_resources(worker)]
    return "/v1/fences/verify", json.dumps({"fences": refs}).encode()


@functools.cache
def _renew_batch(worker: int, _: int) -> tuple[str, bytes]:
    leases = [{"name": f"{BATCH_PREFIX}{worker}-{k}", "generation": 1} for k in range(BATCH_SIZE)]
    document = {"holder": HOLDER, "ttl_seconds": TTL_SECONDS, "leases": leases}
    return "/v1/leases/renew", json.dumps(document).encode()


def _acquire(worker: int, n: int) -> tuple[str, bytes]:
    body = json.dumps({"holder": HOLDER, "ttl_seconds": TTL_SECONDS}).encode()
    return f"/v1/leases/ha-{os.getpid()}-{worker}-{n}/acquire", body


def _verify(worker: int, n: int) -> tuple[str, bytes]:
    body = json.dumps({"lease": FENCE_LEASE, "generation": 1}).encode()
    return f"/v1/fences/fr-{(worker * 7919 + n) % 1000}/verify", body


WORKLOADS: dict[str, tuple[Request, int]] = {
    "batch_verify": (_verify_batch, BATCH_SIZE),
    "batch_renew": (_renew_batch, BATCH_SIZE),
    "acquire": (_acquire, 1),
    "verify": (_verify, 1),
}


class Client:
    """Calls the ASGI app as a server would for one request, and checks the status."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def post(self, path: str, body: bytes) -> bytes:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [
                (b"host", b"bench"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8080),
        }
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop()
            await asyncio.Event().wait()  # the client never leaves
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        status = sent[0]["status"]
        answer = b"".join(m.get("body", b"") for m in sent[1:])
        if status != 200:
            raise RuntimeError(f"{path}: {status} {answer[:300]!r}")
        return answer


async def _prefill(url: str) -> None:
    """The fence's lease, and each connection's leases to renew together."""
    await prefill(url, "fl-", 1, 1)  # FENCE_LEASE
    await prefill(url, BATCH_PREFIX, BATCH_CONNECTIONS, BATCH_SIZE)


async def _measure(app: Any, workload: str, a: argparse.Namespace, postgres: CpuMeter) -> None:
    request, items = WORKLOADS[workload]
    client = Client(app)

    async def connection(worker: int, count: int) -> None:
        for n in range(count):
            await client.post(*request(worker, n))

    # Warm-up: every connection's statements prepared, fences created.
    await asyncio.gather(*(connection(w, 3) for w in range(a.concurrency)))
    per_request, database = [], []
    for _ in range(a.rounds):
        postgres.start()  # (reading /proc is not the service's CPU)
        started = time.process_time()
        await asyncio.gather(
            *(connection(w, a.requests // a.concurrency) for w in range(a.concurrency))
        )
        count = a.requests // a.concurrency * a.concurrency
        per_request.append((time.process_time() - started) / count * 1e6)
        database.append(postgres.elapsed() / count * 1e6)
    best = min(per_request)
    rounds = " ".join(f"{value:.0f}" for value in per_request)
    median = statistics.median(database)
    in_postgres = f"; PostgreSQL {median / items:.2f} µs per item" if postgres.active else ""
    print(
        f"{workload}: {best:.1f} µs per request, {best / items:.2f} µs per item "
        f"(best of {a.rounds}: {rounds}){in_postgres}",
        flush=True,
    )


async def main(url: str, a: argparse.Namespace) -> None:
    settings = Settings(
        database_url=url,
        monitor_enabled=False,
        log_level="warning",
        pool_max_size=a.concurrency + 2,
    )
    async with running(create_app(settings)) as app:
        await _prefill(url)
        postgres = CpuMeter(await postmaster_pid(url))
        for workload in a.workloads:
            await _measure(app, workload, a, postgres)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--database-url", help="a server whose role may CREATEDB (default: embedded)"
    )
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=["batch_verify"])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=200, help="per round")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    with bench_database(arguments.database_url) as database:
        uvloop.run(main(database.url, arguments))
