"""Run a job once per occurrence: acquire its lease, claim its window, run, complete, release.

    result = run_once(client, "close-day", "2026-09-25", close_day)
    if not result.ran:
        log.info("skipped: %s", result.skipped)          # "held" or "completed"

- Another holder holds the job's lease: skip (`held`), no error — it is running right now.
- The window already completed: skip (`completed`) — an earlier or faster run did it.
- The window's occurrence is still ahead of the service's clock (`WindowNotDue`, a registered
  job's window named by a clock that runs ahead): skip (`not_due`), with a warning — the run
  that is on time will do it.
- `fn(ctx)` raises: the window stays claimed but not completed, the lease is released, and the
  error propagates; the next run resumes the window (`ctx.attempt` 2). Write `fn` so that
  repeating a part of it does no harm: `ctx.idempotency_key(...)` names each effect.
- The lease is lost while `fn` runs: `LeaseLost` propagates (async: `fn` is cancelled first) and
  the window is not completed.

`once_per` is the decorator form for schedulers: it has the service resolve the window at call
time from the schedule — the occurrence the scheduler *meant* to run, by the database's clock, so
a run that starts late still lands in its own window instead of making a new one, and a host
whose clock is behind does not land in the one before, nor one whose clock is ahead in the next.

Here is what both flavors share (the context, the result, the offline `resolve_window`);
`arun_once` is written once in `tenure/_async/executor.py`, `run_once` is generated from it
(scripts/generate_sync.py), and `once_per` (`tenure._once_per`) picks one by the client.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

from tenure._config import DEFAULT_EARLY_TOLERANCE
from tenure._models import JobSpec
from tenure._tokens import fencing_headers, format_token, idempotency_key

if TYPE_CHECKING:
    from tenure.schedule import KeyFormat

__all__ = [
    "Occurrences",
    "RunContext",
    "RunResult",
    "SkipReason",
    "resolve_window",
    "with_lease",
]

_log = logging.getLogger("tenure")

T = TypeVar("T")
SkipReason = Literal["held", "completed", "not_due"]


class _Guard(Protocol):
    """What a context needs from a lease handle."""

    name: str

    @property
    def generation(self) -> int: ...

    @property
    def lost(self) -> bool: ...

    def check(self) -> None: ...


@dataclass(frozen=True, slots=True)
class RunContext:
    """What `fn` receives: which occurrence it runs, and the means to stay fenced."""

    job: str
    window: str
    attempt: int
    _guard: _Guard = field(repr=False)

    @property
    def lease(self) -> str:
        return self._guard.name

    @property
    def generation(self) -> int:
        return self._guard.generation

    @property
    def lost(self) -> bool:
        return self._guard.lost

    def check(self) -> None:
        """Raise `LeaseLost` if the lease is, or may be, lost. Call it between units of work."""
        self._guard.check()

    @property
    def fencing_token(self) -> str:
        return format_token(self.lease, self.generation)

    def fencing_headers(self) -> dict[str, str]:
        """`{"Fencing-Token": "<lease>/<generation>"}` for requests to a fenced resource."""
        return fencing_headers(self.lease, self.generation)

    def idempotency_key(self, *parts: object) -> str:
        """`job/window/part/…`: the same for every attempt of this occurrence, so a receiver
        that deduplicates by it applies each effect once (`close-day/2026-09-25/store/42`);
        never the same for two occurrences or parts (see `tenure.idempotency_key`)."""
        return idempotency_key(self.job, self.window, *parts)


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """Whether `fn` ran (else why not), which attempt it was, and what it returned."""

    job: str
    window: str
    ran: bool
    skipped: SkipReason | None = None
    attempt: int | None = None
    generation: int | None = None
    value: T | None = None

    @classmethod
    def skip(cls, job: str, window: str, reason: SkipReason, why: str = "") -> RunResult[T]:
        # Held and completed are the normal lot of all but one replica; not_due is a mistake.
        level = logging.WARNING if reason == "not_due" else logging.INFO
        _log.log(level, "job %r window %r skipped: %s%s", job, window, reason, why and f" ({why})")
        return cls(job=job, window=window, ran=False, skipped=reason)


@dataclass(frozen=True, slots=True)
class Occurrences:
    """What `once_per` was told: the job, its schedule, and how each run holds its lease."""

    job: str
    cron: str
    tz: str
    key: KeyFormat
    ttl: float
    lease: str | None
    wait: float
    early_tolerance: float
    register: JobSpec | None


def with_lease(spec: JobSpec, lease: str | None) -> JobSpec:
    """The run's lease is the job's, unless the spec names one."""
    if spec.lease is not None or lease is None:
        return spec
    return dataclasses.replace(spec, lease=lease)


def resolve_window(
    cron: str,
    tz: str,
    key: KeyFormat = "occurrence",
    *,
    now: datetime | None = None,
    early_tolerance: float = DEFAULT_EARLY_TOLERANCE,
) -> str:
    """The window key of the occurrence a scheduler firing at `now` meant to run, by this
    host's clock unless `now` is given; `client.resolve_window` asks the service's clock."""
    from tenure import schedule  # lazy: cronsim is needed only with schedules

    moment = datetime.now(UTC) if now is None else now.astimezone(UTC)
    # In UTC: adding to a local wall clock would be off by an hour across a DST change.
    return schedule.resolve(cron, tz, moment + timedelta(seconds=early_tolerance), key).window
