"""Tenure's Python client: leases, job windows and fencing tokens, once per occurrence.

    from tenure import Tenure, run_once

    with Tenure.from_env() as client:                  # TENURE_URL, TENURE_TOKEN
        result = run_once(client, "close-day", "2026-09-25", close_day)

Importing `tenure` needs only `httpx`; the schedule functions import `cronsim` when called.
Everything public is listed in `__all__`; modules starting with `_` are private.
"""

from contextlib import suppress as _suppress

from tenure._client import AsyncTenure, Tenure
from tenure._config import DEFAULT_MAX_WAIT_PER_REQUEST, DEFAULT_TIMEOUT, DEFAULT_TTL, DEFAULT_URL
from tenure._errors import (
    FenceLeaseMismatch,
    InvalidRequest,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    ServiceUnavailable,
    StaleGeneration,
    TenureError,
    TransportError,
    UnexpectedResponse,
    UnknownGeneration,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
    WindowNotFound,
)
from tenure._executor import (
    DEFAULT_EARLY_TOLERANCE,
    RunContext,
    RunResult,
    SkipReason,
    arun_once,
    once_per,
    resolve_window,
    run_once,
)
from tenure._lease import AsyncLeaseHandle, LeaseHandle, LostCallback
from tenure._models import Fence, Lease, Page, Window
from tenure._retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy
from tenure._schedule import (
    KeyFormat,
    Resolved,
    check_cron,
    check_timezone,
    next_occurrence,
    resolve,
    scheduled_occurrence,
    window_key,
)
from tenure._tokens import FENCING_HEADER, fencing_headers, format_token, parse_token

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_EARLY_TOLERANCE",
    "DEFAULT_MAX_WAIT_PER_REQUEST",
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TTL",
    "DEFAULT_URL",
    "FENCING_HEADER",
    "NO_RETRY",
    "AsyncLeaseHandle",
    "AsyncTenure",
    "Fence",
    "FenceLeaseMismatch",
    "InvalidRequest",
    "KeyFormat",
    "Lease",
    "LeaseHandle",
    "LeaseHeld",
    "LeaseLost",
    "LeaseNotFound",
    "LostCallback",
    "Page",
    "Resolved",
    "RetryPolicy",
    "RunContext",
    "RunResult",
    "ServiceUnavailable",
    "SkipReason",
    "StaleGeneration",
    "Tenure",
    "TenureError",
    "TransportError",
    "UnexpectedResponse",
    "UnknownGeneration",
    "Window",
    "WindowCompleted",
    "WindowLeaseMismatch",
    "WindowNotClaimed",
    "WindowNotFound",
    "__version__",
    "arun_once",
    "check_cron",
    "check_timezone",
    "fencing_headers",
    "format_token",
    "next_occurrence",
    "once_per",
    "parse_token",
    "resolve",
    "resolve_window",
    "run_once",
    "scheduled_occurrence",
    "window_key",
]

# Public names say they live in `tenure`, not in its private modules (reprs, docs, tracebacks).
for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith("tenure._"):
        with _suppress(AttributeError, TypeError):  # objects whose module is read-only
            _value.__module__ = "tenure"
del _name, _value, _suppress
