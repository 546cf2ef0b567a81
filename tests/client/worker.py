"""A separate OS process for the multi-process client tests.

worker.py run-once URL JOB WINDOW LOG START_AT HOLD_SECONDS
    at wall time START_AT, run_once a function that appends this pid to LOG and then sleeps
    HOLD_SECONDS; prints the RunResult as one JSON line.
worker.py hold URL NAME TTL
    hold the lease (renewing) and print {"generation": n} once held; run until killed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tenure import RunContext, Tenure, run_once


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


def main(arguments: list[str]) -> None:
    command, *rest = arguments
    if command == "run-once":
        _run_once(*rest)
    elif command == "hold":
        _hold(*rest)
    else:
        sys.exit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
