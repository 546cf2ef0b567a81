"""Close yesterday's sales at 00:05 São Paulo time, once per day across every replica (APScheduler).

    pip install apscheduler              # 3.x; not a dependency of tenure
    tenure serve                         # another terminal: the service at http://127.0.0.1:8080
    TENURE_URL=http://127.0.0.1:8080 python examples/apscheduler_job.py          # the schedule
    TENURE_URL=http://127.0.0.1:8080 python examples/apscheduler_job.py --now    # one call now

Start it in as many processes or machines as you like: every scheduler fires at 00:05, one of
them closes the day, the others skip (`held` while it runs, `completed` after). A replica whose
scheduler fires late — a restart, a slow clock — computes the same window (the day the schedule
meant to close) and finds it completed. A run that fails leaves the window open: the next call,
on any replica, resumes it as attempt 2, and the idempotency key makes each store's write happen
once across attempts.

Its job is `close-day-apscheduler`, a name of its own: the README's curl cycle and the other
examples close their days under other names, so trying them first does not make this one skip.
"""

from __future__ import annotations

import logging
import sys

from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.cron import CronTrigger

from tenure import RunContext, RunResult, Tenure, once_per

CRON = "5 0 * * *"
TIME_ZONE = "America/Sao_Paulo"
STORES = [17, 42, 99]
JOB = "close-day-apscheduler"

client = Tenure.from_env()  # TENURE_URL, TENURE_TOKEN


def post_commission(store: int, day: str, idempotency_key: str, headers: dict[str, str]) -> None:
    """Stand-in for the real effect: an HTTP call to a payments API, an INSERT, an e-mail…"""
    print(f"close {day} for store {store}: Idempotency-Key={idempotency_key} {headers}")


@once_per(JOB, cron=CRON, tz=TIME_ZONE, key="previous_day", client=client, ttl=90)
def close_day(ctx: RunContext) -> int:
    """ctx.window is the day being closed (key="previous_day": the day before the 00:05 run)."""
    for store in STORES:
        ctx.check()  # stop between stores if the lease was lost (see docs/client.md)
        post_commission(
            store,
            ctx.window,
            # close-day-apscheduler/2026-09-24/store/42, and Fencing-Token: <JOB>/<generation>
            idempotency_key=ctx.idempotency_key("store", store),
            headers=ctx.fencing_headers(),
        )
    return len(STORES)


def report(result: RunResult[int]) -> None:
    if result.ran:
        print(f"closed {result.window}: {result.value} stores (attempt {result.attempt})")
    else:
        print(f"skipped {result.window}: {result.skipped}")


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if "--now" in sys.argv:
        report(close_day())
        return
    scheduler = BlockingScheduler(timezone=TIME_ZONE)
    # A late run is safe (it lands in its own window), so let APScheduler run it rather than drop
    # it; coalesce so a backlog of missed runs becomes one.
    scheduler.add_job(
        lambda: report(close_day()),
        CronTrigger.from_crontab(CRON, timezone=TIME_ZONE),
        misfire_grace_time=6 * 3600,
        coalesce=True,
    )
    try:
        scheduler.start()
    finally:
        client.close()


if __name__ == "__main__":
    main()
