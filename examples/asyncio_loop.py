"""A plain asyncio loop that runs a job every minute, once per minute across every copy of it.

    tenure serve                         # another terminal: the service at http://127.0.0.1:8080
    TENURE_URL=http://127.0.0.1:8080 python examples/asyncio_loop.py

Start it in two terminals: each minute one copy runs the job and the other prints `skipped`.
Stop the running one with Ctrl-C mid-job: its lease is released on the way out, and the other
copy runs the next minute. Each batch passes through a fence first: `verify_fence` records the
generation for the resource and refuses an older one with `StaleGeneration`, so a copy that lost
its lease while paused cannot write after a newer holder has.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from tenure import AsyncTenure, RunContext, next_occurrence, once_per

JOB = "minutely-export"
CRON = "* * * * *"
TIME_ZONE = "UTC"


async def main() -> None:
    async with AsyncTenure.from_env() as client:  # TENURE_URL, TENURE_TOKEN

        @once_per(JOB, cron=CRON, tz=TIME_ZONE, client=client, ttl=30)
        async def export(ctx: RunContext) -> int:
            rows = 0
            for batch in range(5):
                # In a real job the fence check belongs to the resource, in the same transaction
                # as the write; here the service's fence stands in for it. It raises
                # StaleGeneration once a newer holder has written.
                await client.verify_fence("export-bucket", ctx.lease, ctx.generation)
                print(f"{ctx.window} batch {batch} key={ctx.idempotency_key('batch', batch)}")
                rows += 100
                await asyncio.sleep(2)  # cancelled at once if the lease is lost
            return rows

        while True:
            result = await export()
            print(f"{result.window}: ran={result.ran} skipped={result.skipped} rows={result.value}")
            now = datetime.now(UTC)
            await asyncio.sleep((next_occurrence(CRON, TIME_ZONE, now) - now).total_seconds())


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
