"""Tenure's Python client: leases, job windows and fencing tokens, once per occurrence.

    from tenure import Tenure, run_once

    with Tenure.from_env() as client:                  # TENURE_URL, TENURE_TOKEN
        result = run_once(client, "close-day", "2026-09-25", close_day)

Importing `tenure` needs only `httpx`; the schedule functions import `cronsim` when called,
and `AsyncTenure` imports `httpx_aiohttp` (aiohttp) when made.
Everything public is listed in `__all__`; modules starting with `_` are private.
"""

from contextlib import suppress as _suppress

from tenure._async.client import AsyncTenure
from tenure._async.executor import arun_once
from tenure._async.lease import AsyncLeaseHandle
from tenure._config import (
    DEFAULT_EARLY_TOLERANCE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_WAIT_PER_REQUEST,
    DEFAULT_TIMEOUT,
    DEFAULT_TTL,
    DEFAULT_URL,
)
from tenure._errors import (
    FenceLeaseMismatch,
    Forbidden,
    GenerationExhausted,
    HoldingOfAnotherPrincipal,
    InvalidRequest,
    JobNotFound,
    LeaseHeld,
    LeaseLost,
    LeaseNotFound,
    PayloadTooLarge,
    RateLimited,
    ReservedName,
    ServiceUnavailable,
    ShuttingDown,
    StaleGeneration,
    TenureError,
    TooManyStreams,
    TransportError,
    Unauthenticated,
    UnexpectedResponse,
    UnknownGeneration,
    WindowCompleted,
    WindowLeaseMismatch,
    WindowNotClaimed,
    WindowNotDue,
    WindowNotFound,
)
from tenure._events import StreamEvent
from tenure._executor import RunContext, RunResult, SkipReason, resolve_window
from tenure._fencing import (
    FencedByAnotherLease,
    FencedRequest,
    FenceStore,
    FenceStoreUnavailable,
    FencingError,
    FencingTokenMalformed,
    FencingTokenMissing,
    MemoryFenceStore,
    RemoteFenceStore,
    SchemaTooOld,
    StaleFencingToken,
    UnknownFencingGeneration,
    accepted_token,
    check_token,
    fenced,
    tenure_resource_name,
)
from tenure._lease import LostCallback
from tenure._middleware import FencingMiddleware
from tenure._models import (
    DEFAULT_DEADLINE,
    Fence,
    FenceRefusal,
    Job,
    JobSpec,
    Lease,
    Overview,
    Page,
    Renewals,
    UnregisteredJob,
    Verifications,
    Window,
)
from tenure._monitoring import Alert, JobStatus, LeaseStatus, NotableEvent
from tenure._once_per import once_per
from tenure._propagation import (
    async_fencing_hook,
    current_fencing_token,
    fencing_hook,
    fencing_token,
)
from tenure._retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy
from tenure._sync.client import Tenure
from tenure._sync.executor import run_once
from tenure._sync.lease import LeaseHandle
from tenure._tokens import (
    FENCING_HEADER,
    MAX_GENERATION,
    fencing_headers,
    format_token,
    idempotency_key,
    parse_token,
)
from tenure.schedule import (
    KeyFormat,
    Resolved,
    check_cron,
    check_timezone,
    next_occurrence,
    resolve,
    scheduled_occurrence,
    window_key,
    window_occurrence,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_EARLY_TOLERANCE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_WAIT_PER_REQUEST",
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TTL",
    "DEFAULT_URL",
    "FENCING_HEADER",
    "MAX_GENERATION",
    "NO_RETRY",
    "Alert",
    "AsyncLeaseHandle",
    "AsyncTenure",
    "Fence",
    "FenceLeaseMismatch",
    "FenceRefusal",
    "FenceStore",
    "FenceStoreUnavailable",
    "FencedByAnotherLease",
    "FencedRequest",
    "FencingError",
    "FencingMiddleware",
    "FencingTokenMalformed",
    "FencingTokenMissing",
    "Forbidden",
    "GenerationExhausted",
    "HoldingOfAnotherPrincipal",
    "InvalidRequest",
    "Job",
    "JobNotFound",
    "JobSpec",
    "JobStatus",
    "KeyFormat",
    "Lease",
    "LeaseHandle",
    "LeaseHeld",
    "LeaseLost",
    "LeaseNotFound",
    "LeaseStatus",
    "LostCallback",
    "MemoryFenceStore",
    "NotableEvent",
    "Overview",
    "Page",
    "PayloadTooLarge",
    "RateLimited",
    "RemoteFenceStore",
    "Renewals",
    "ReservedName",
    "Resolved",
    "RetryPolicy",
    "RunContext",
    "RunResult",
    "SchemaTooOld",
    "ServiceUnavailable",
    "ShuttingDown",
    "SkipReason",
    "StaleFencingToken",
    "StaleGeneration",
    "StreamEvent",
    "Tenure",
    "TenureError",
    "TooManyStreams",
    "TransportError",
    "Unauthenticated",
    "UnexpectedResponse",
    "UnknownFencingGeneration",
    "UnknownGeneration",
    "UnregisteredJob",
    "Verifications",
    "Window",
    "WindowCompleted",
    "WindowLeaseMismatch",
    "WindowNotClaimed",
    "WindowNotDue",
    "WindowNotFound",
    "__version__",
    "accepted_token",
    "arun_once",
    "async_fencing_hook",
    "check_cron",
    "check_timezone",
    "check_token",
    "current_fencing_token",
    "fenced",
    "fencing_headers",
    "fencing_hook",
    "fencing_token",
    "format_token",
    "idempotency_key",
    "next_occurrence",
    "once_per",
    "parse_token",
    "resolve",
    "resolve_window",
    "run_once",
    "scheduled_occurrence",
    "tenure_resource_name",
    "window_key",
    "window_occurrence",
]

# Public names say they live in `tenure`, not in its private modules (reprs, docs, tracebacks).
for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith("tenure._"):
        with _suppress(AttributeError, TypeError):  # objects whose module is read-only
            _value.__module__ = "tenure"
del _name, _value, _suppress
