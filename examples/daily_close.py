"""Pay every store its commission for a day, once, through the fenced payments API.

    scripts/serve                                          # terminal 1: Tenure on :8080
    .venv/bin/uvicorn --factory examples.payments_api:create_app --port 8081   # terminal 2
    TENURE_URL=http://127.0.0.1:8080 PAYMENTS_URL=http://127.0.0.1:8081 \\
        .venv/bin/python examples/daily_close.py 2026-09-25                      # terminal 3

Run the last command in two terminals at once: one pays, the other prints `skipped: held`; run
it again and it prints `skipped: completed`. Each payout carries the holding's fencing token
and an idempotency key of the occurrence (`daily-close/2026-09-25/store/42`), so:

- a copy that was paused past its lease (try `kill -STOP`, wait 30 s, `kill -CONT`) is answered
  409 stale-generation by the API as soon as the new holder has paid anything, and stops;
- a retry of the day — after a crash half-way — pays the missing stores and gets the first
  payout back (200) for the stores already paid.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import date, timedelta

import httpx

from tenure import RunContext, StaleGeneration, Tenure, run_once

PAYMENTS_URL = "http://127.0.0.1:8081"
STORES = [17, 42, 99]
TTL = 30.0


def commission_cents(store: int, day: str) -> int:
    """Stand-in for the real sum of the day's sales."""
    return 500 * store


def close_day(payments: httpx.Client, day: str) -> Callable[[RunContext], int]:
    def run(ctx: RunContext) -> int:
        for store in STORES:
            ctx.check()  # stop between payouts once the lease is known to be lost
            response = payments.post(
                "/payouts",
                json={"store": store, "day": day, "amount_cents": commission_cents(store, day)},
                headers={
                    **ctx.fencing_headers(),  # Fencing-Token: daily-close/<generation>
                    "Idempotency-Key": ctx.idempotency_key("store", store),
                },
            )
            if response.status_code == 409:  # a newer holding has paid: this one is fenced off
                problem = response.json()
                raise StaleGeneration(
                    problem.get("detail", "fenced off"),
                    highest=int(problem.get("highest", 0)),
                    status=409,
                    problem=problem,
                )
            response.raise_for_status()
            print(f"store {store}: {response.status_code} {response.json()['fencing_token']}")
        return len(STORES)

    return run


def main(arguments: list[str]) -> None:
    day = arguments[0] if arguments else (date.today() - timedelta(days=1)).isoformat()
    base_url = os.environ.get("PAYMENTS_URL", PAYMENTS_URL)
    with Tenure.from_env() as tenure, httpx.Client(base_url=base_url, timeout=10) as payments:
        result = run_once(tenure, "daily-close", day, close_day(payments, day), ttl=TTL)
    if result.ran:
        print(f"{day}: paid {result.value} stores (attempt {result.attempt})")
    else:
        print(f"{day}: skipped: {result.skipped}")


if __name__ == "__main__":
    main(sys.argv[1:])
