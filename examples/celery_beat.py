"""Close yesterday's sales from Celery beat, once per day even with several beats and workers.

    pip install celery                   # 5.x; not a dependency of tenure
    tenure serve                         # another terminal: the service at http://127.0.0.1:8080
    cd examples
    TENURE_URL=http://127.0.0.1:8080 celery -A celery_beat worker --beat --loglevel=INFO
    TENURE_URL=http://127.0.0.1:8080 celery -A celery_beat call close-day    # one call now

The broker is kombu's filesystem transport in a temporary folder, so nothing but the Tenure
service needs to run; use your real broker in production.

Running beat in two places (two deployments, a failover copy) sends the task twice; a retried
or redelivered task runs it again. Every copy calls `run_once` for the same window: one closes
the day, the others return `skipped: held` or `skipped: completed`.

The window is resolved by the service when the worker starts the task, as the most recent
occurrence of the schedule by the database's clock (a worker whose clock is off cannot pick the
wrong day). If your queue can lag behind by more than the schedule's period, resolve it where the
task is sent and pass it as an argument instead.

The task is named `close-day`; the job it runs in Tenure is `close-day-celery`, a name of its
own: the README's curl cycle and the other examples close their days under other names, so
trying them first does not make this one skip.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

from celery import Celery
from celery.schedules import crontab

from tenure import RunContext, Tenure, run_once

CRON = "5 0 * * *"
TIME_ZONE = "America/Sao_Paulo"
STORES = [17, 42, 99]
JOB = "close-day-celery"

STATE = Path(tempfile.gettempdir()) / "tenure-celery-example"
(STATE / "control").mkdir(parents=True, exist_ok=True)

app = Celery("celery_beat", broker="filesystem://")
app.conf.update(
    broker_transport_options={
        "data_folder_in": str(STATE),
        "data_folder_out": str(STATE),
        "control_folder": str(STATE / "control"),
    },
    beat_schedule_filename=str(STATE / "celerybeat-schedule"),
    timezone=TIME_ZONE,
    beat_schedule={"close-day": {"task": "close-day", "schedule": crontab(minute=5, hour=0)}},
    # Acknowledge after the task ran: a worker that dies mid-run gets the task redelivered, and
    # the open window makes the redelivery resume it (attempt 2) instead of losing the day.
    task_acks_late=True,
)

# One client per worker process, made on first use: prefork workers fork after importing this
# module, and an HTTP connection pool must not be shared across a fork.
_client: Tenure | None = None
_client_lock = threading.Lock()


def client() -> Tenure:
    global _client
    with _client_lock:
        if _client is None:
            _client = Tenure.from_env()  # TENURE_URL, TENURE_TOKEN
        return _client


def close_stores(ctx: RunContext) -> int:
    for store in STORES:
        ctx.check()  # stop between stores if the lease was lost
        key = ctx.idempotency_key("store", store)  # close-day-celery/2026-09-24/store/42
        print(f"close {ctx.window} store {store} key={key} {ctx.fencing_headers()}")
    return len(STORES)


@app.task(name="close-day")
def close_day() -> dict[str, Any]:
    window = client().resolve_window(CRON, TIME_ZONE, "previous_day")
    result = run_once(client(), JOB, window, close_stores, ttl=90)
    return {"window": window, "ran": result.ran, "skipped": result.skipped, "stores": result.value}
