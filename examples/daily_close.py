"""Pay every store its commission for a day, once, through the fenced payments API.

    scripts/serve                                          # terminal 1: Tenure on :8080
    .venv/bin/uvicorn --factory examples.payments_api:create_app --port 8081   # terminal 2
    .venv/bin/python examples/daily_close.py 2026-09-25                        # terminal 3

    daily_close.py [DAY] [--ttl SECONDS] [--pause-after-first-payout]

DAY is an ISO date (default: yesterday), checked before anything is claimed; `TENURE_URL` and
`PAYMENTS_URL` default to the two services above. Run it again and it prints `skipped:
completed`. Each payout carries the holding's fencing token and an idempotency key of the
occurrence (`daily-close/2026-09-25/store/42`): a retry of the day, after a crash half-way, pays
the missing stores and gets the first payout back (200) for the stores already paid.

Watch the fence stop a paused copy (in terminal 3; the shell's job control does the rest):

    .venv/bin/python examples/daily_close.py 2026-09-26 --pause-after-first-payout
    .venv/bin/python examples/daily_close.py 2026-09-26   # skipped: held
    .venv/bin/python examples/daily_close.py 2026-09-26   # 30 s later: paid 3 stores (attempt 2)
    fg                                                    # fenced off: generation 3 is …

The first pays store 17, then stops itself (SIGSTOP) holding the lease: the whole process stops,
renewals included, as in a long GC pause or a frozen VM. The pause falls where only a fence
helps, after the copy checked its lease and before its next request: resumed (`fg`, or
`kill -CONT PID`), it sends that request with its old generation, and the payments API, which
has accepted a newer one, answers 409 stale-generation.

Exit status, with a one-line message on stderr for each failure:
    0  paid, or skipped (`held`: another copy is running the day; `completed`: it is done)
    1  Tenure or the payments API could not be reached, or refused a request
    2  invalid arguments (a DAY that is not a date, a TTL that is not positive)
    3  fenced off: a newer holding of the lease has paid, and this copy stopped
    4  the lease was lost mid-run
Running the day again is always safe: it resumes an open day (attempt 2) or skips a done one.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import NoReturn

import httpx

from tenure import (
    LeaseLost,
    RunContext,
    StaleGeneration,
    Tenure,
    TenureError,
    TransportError,
    run_once,
)
from tenure.problems import ProblemType

JOB = "daily-close"
PAYMENTS_URL = "http://127.0.0.1:8081"
STORES = [17, 42, 99]
TTL = 30.0

SERVICE_ERROR = 1  # 2 is argparse's usage error
FENCED_OFF = 3
LEASE_LOST = 4


def commission_cents(store: int, day: str) -> int:
    """Stand-in for the real sum of the day's sales."""
    return 500 * store


def iso_day(text: str) -> str:
    """The day as YYYY-MM-DD: one spelling per day, so one window and one set of keys."""
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def seconds(text: str) -> float:
    value = float(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def pause(ctx: RunContext, ttl: float) -> None:
    """Stop this process, renewals included, until it is sent SIGCONT."""
    pid = os.getpid()
    print(
        f"paused (pid {pid}) holding generation {ctx.generation}, whose lease expires within"
        f" {ttl:g} s; resume with `fg` or `kill -CONT {pid}`",
        flush=True,
    )
    os.kill(pid, signal.SIGSTOP)


def close_day(
    payments: httpx.Client, day: str, options: argparse.Namespace
) -> Callable[[RunContext], int]:
    def run(ctx: RunContext) -> int:
        for paid, store in enumerate(STORES):
            ctx.check()  # stop between payouts once the lease is known to be lost
            if paid == 1 and options.pause_after_first_payout:
                pause(ctx, options.ttl)  # after the check: only the fence can stop what follows
            response = payments.post(
                "/payouts",
                json={"store": store, "day": day, "amount_cents": commission_cents(store, day)},
                headers={
                    **ctx.fencing_headers(),  # Fencing-Token: daily-close/<generation>
                    "Idempotency-Key": ctx.idempotency_key("store", store),
                },
            )
            problem = response.json() if response.status_code == 409 else {}
            if problem.get("type") == ProblemType.STALE_GENERATION.type:
                highest = int(problem["highest"])
                raise StaleGeneration(
                    f"generation {ctx.generation} is superseded by {highest}",
                    highest=highest,
                    problem=problem,
                )
            response.raise_for_status()
            print(f"store {store}: {response.status_code} {response.json()['fencing_token']}")
        return len(STORES)

    return run


def fail(status: int, message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(status)


def arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="daily_close.py", description="Pay every store its commission for DAY, once."
    )
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    parser.add_argument("day", nargs="?", type=iso_day, default=yesterday, help="ISO date")
    parser.add_argument("--ttl", type=seconds, default=TTL, help="lease TTL in seconds (30)")
    parser.add_argument(
        "--pause-after-first-payout",
        action="store_true",
        help="stop this process (SIGSTOP) before the second payout; resume with `fg`",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> None:
    options = arguments(argv)
    day = options.day
    # Every outcome is told in one line below; the client's own log lines (a renewal that came
    # too late, a release refused because the lease was already lost) would only repeat it.
    logging.getLogger("tenure").setLevel(logging.CRITICAL)
    payments_url = os.environ.get("PAYMENTS_URL", PAYMENTS_URL)
    tenure = Tenure.from_env()  # TENURE_URL, TENURE_TOKEN
    try:
        with tenure, httpx.Client(base_url=payments_url, timeout=10) as payments:
            job = close_day(payments, day, options)
            result = run_once(tenure, JOB, day, job, ttl=options.ttl)
    except StaleGeneration as error:
        fail(FENCED_OFF, f"fenced off: {error}")
    except LeaseLost as error:
        fail(LEASE_LOST, f"lease lost: {error}; run {day} again to finish it")
    except TransportError as error:
        fail(SERVICE_ERROR, f"cannot reach Tenure at {tenure.base_url}: {error}")
    except TenureError as error:
        fail(SERVICE_ERROR, f"Tenure refused: {error}")
    except httpx.TransportError as error:
        fail(SERVICE_ERROR, f"cannot reach the payments API at {payments_url}: {error}")
    except httpx.HTTPStatusError as error:
        answer = error.response
        fail(SERVICE_ERROR, f"the payments API answered {answer.status_code}: {answer.text}")
    if result.ran:
        print(f"{day}: paid {result.value} stores (attempt {result.attempt})")
    else:
        print(f"{day}: skipped: {result.skipped}")


if __name__ == "__main__":
    main(sys.argv[1:])
