"""A separate OS process for the multi-process client tests.

worker.py run-once URL JOB WINDOW LOG START_AT HOLD_SECONDS
    at wall time START_AT, run_once a function that appends this pid to LOG and then sleeps
    HOLD_SECONDS; prints the RunResult as one JSON line.
worker.py hold URL NAME TTL
    hold the lease (renewing) and print {"generation": n} once held; run until killed.
worker.py schedule URL CRON KEY JOB
    the windows of schedule CRON (UTC, key format KEY) by this host: `client.resolve_window`'s,
    and the RunResults of `@once_per` runs of jobs JOB-sync (Tenure) and JOB-async
    (AsyncTenure), printed as one JSON line; the client's warnings go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

from tenure import AsyncTenure, RunContext, RunResult, Tenure, once_per, run_once
from tenure.schedule import KeyFormat


def _run_once(url: str, job: str, window: str, log: str, start_at: str, hold: str) -> None:
    def work(ctx: RunContext) -> int:
        with Path(log).open("a") as file:
            file.write(f"{os.getpid()} {ctx.generation} {ctx.attempt}\n")
        time.sleep(float(hold))
        return os.getpid()

    with Tenure(url) as client:
        time.sleep(max(0.0, float(start_at) - time.time()))
        result = run_once(client, job, window, work, ttl=5)
    print(json.dumps({"ran": result.ran, "skipped": result.skipped, "value": result.value}))


def _hold(url: str, name: str, ttl: str) -> None:
    with Tenure(url) as client, client.lease(name, float(ttl)) as lease:
        print(json.dumps({"generation": lease.generation}), flush=True)
        while True:
            time.sleep(1)


def _ran(result: RunResult[str]) -> dict[str, Any]:
    return {"ran": result.ran, "skipped": result.skipped, "window": result.window}


def _schedule(url: str, cron: str, key: str, job: str) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    form = cast("KeyFormat", key)
    with Tenure(url) as client:
        resolved = client.resolve_window(cron, "UTC", form)

        @once_per(f"{job}-sync", cron=cron, tz="UTC", key=form, client=client)
        def run(ctx: RunContext) -> str:
            return ctx.window

        ran = run()

    async def arun() -> RunResult[str]:
        async with AsyncTenure(url) as aclient:

            @once_per(f"{job}-async", cron=cron, tz="UTC", key=form, client=aclient)
            async def work(ctx: RunContext) -> str:
                return ctx.window

            return await work()

    answer = {
        "resolved": resolved,
        "once_per": _ran(ran),
        "async_once_per": _ran(asyncio.run(arun())),
    }
    print(json.dumps(answer))


def main(arguments: list[str]) -> None:
    command, *rest = arguments
    if command == "run-once":
        _run_once(*rest)
    elif command == "hold":
        _hold(*rest)
    elif command == "schedule":
        _schedule(*rest)
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
