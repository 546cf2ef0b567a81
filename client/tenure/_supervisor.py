"""`tenure run`: run any command once per occurrence, under a lease and a window claim.

    tenure run close-day --ttl 90 --cron "5 0 * * *" --tz America/Sao_Paulo --key previous_day \\
        -- ./close-day.sh

The command runs only if this process takes the job's lease and the window is not completed. With
`--cron`, the window is the occurrence the schedule meant by the service's (the database's) clock.
The command gets, in its environment, TENURE_JOB, TENURE_LEASE, TENURE_WINDOW, TENURE_GENERATION,
TENURE_ATTEMPT, TENURE_IDEMPOTENCY_KEY (`<job>/<window>`) and TENURE_FENCING_TOKEN
(`<lease>/<generation>`, the value of the `Fencing-Token` header). While it runs, the lease is
renewed in the background. SIGINT and SIGTERM sent to `tenure run` are forwarded to it. The
window is completed only when the command exits 0.

The command never runs beside the lease's next holder: it is dead before the lease can expire.
The deadline is the TTL after the last successful renewal was *sent* (the service set the expiry
later than that); the command gets SIGTERM `--grace` seconds before it — when no renewal has
succeeded by then — and SIGKILL `KILL_MARGIN` before it. Once the lease is lost — the service
answered `lease-lost` (a force-release: the next holder may acquire at once) or refused the
renewal, or the deadline passed (`tenure run` itself paused) — the turn is over: SIGKILL at once,
no SIGTERM, since what a command does on SIGTERM (finish a unit of work, flush) is what must not
happen beside the next holder. The grace is at most half the time between a renewal falling due
and the SIGKILL, so that a renewal that is merely slow never stops the command; by default it is
`DEFAULT_GRACE`, or less when the TTL requires.

"The command" is the command and everything it started (`tenure._process_tree`): a descendant
that left its process group (`setsid`) is stopped with it. When `tenure run` reports the run
over — the command exited, or was stopped — none of them is running: what the command leaves
running when it exits gets SIGTERM, then SIGKILL `--grace` later (or before the deadline), and
only then is the window completed. SIGINT and SIGTERM sent to `tenure run` (an operator stopping
it) are forwarded, and SIGKILL follows `--grace` later in the same way.

Exit status:
    the command's own   it ran (128 + N when it was killed by signal N); 126/127 when it could
                        not be executed / was not found
    111  skipped: the lease is held by another holder (0 with --skip-ok)
    112  skipped: the window is already completed (0 with --skip-ok)
    113  the lease was lost: the command was stopped (or finished after the loss) and the window
         was not completed
    114  the service is unreachable or unavailable (nothing ran, or the command succeeded but its
         window could not be completed: the next run will do it again)
    2    invalid usage, or the service refused the request (a bad job name, …)

If `tenure run` itself is killed with SIGKILL, nothing stops the command: its lease expires after
the TTL and another run may start, which is what the fencing token is for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType

from tenure._errors import (
    LeaseHeld,
    LeaseLost,
    ServiceUnavailable,
    TenureError,
    TransportError,
    WindowCompleted,
)
from tenure._models import JobSpec
from tenure._process_tree import ProcessTree, subreaper
from tenure._renewal import LeaseClock
from tenure._sync.client import Tenure
from tenure._sync.lease import LeaseHandle
from tenure._tokens import idempotency_key
from tenure.schedule import KeyFormat

__all__ = [
    "DEFAULT_GRACE",
    "EXIT_COMPLETED",
    "EXIT_HELD",
    "EXIT_LOST",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "KILL_MARGIN",
    "RunOptions",
    "Schedule",
    "child_exit_code",
    "run_command",
    "stop_grace",
]

EXIT_USAGE = 2
EXIT_HELD = 111
EXIT_COMPLETED = 112
EXIT_LOST = 113
EXIT_UNREACHABLE = 114
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127

# The grace when --grace is not given, cut without a word when the TTL requires.
DEFAULT_GRACE = 10.0
# The command is SIGKILLed this long before the lease may expire: time for the supervisor to
# wake and for the kill to take effect before the service can grant the lease again.
KILL_MARGIN = 0.1
# How often the supervisor looks at the child, the lease and the signals it received.
POLL_SECONDS = 0.05
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True, slots=True)
class Schedule:
    """`--cron`, `--tz` and `--key`: the window is the occurrence the schedule meant when the
    run starts, resolved by the service's clock."""

    cron: str
    tz: str
    key: KeyFormat = "occurrence"


@dataclass(frozen=True, slots=True)
class RunOptions:
    job: str
    window: str | Schedule
    command: Sequence[str]
    ttl: float
    # At most `stop_grace(ttl, renew_every, …)`: a longer one would stop a healthy command.
    grace: float
    lease: str | None = None
    wait: float = 0.0
    renew_every: float | None = None
    skip_ok: bool = False
    # Registered (once) before the run, so the service alerts when a window is missed.
    register: JobSpec | None = None


class _Interrupted(Exception):
    """A forwarded signal arrived before the command started."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def child_exit_code(returncode: int) -> int:
    """The command's exit status as a shell reports it: 128 + N when killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def stop_grace(ttl: float, renew_every: float | None, grace: float) -> float:
    """The grace a command gets between SIGTERM and SIGKILL: `grace`, but at most half the time
    from a renewal falling due to the SIGKILL, so that only renewals failing for that long stop
    the command. ValueError when the TTL leaves no such time."""
    clock = LeaseClock(ttl, renew_every)
    spare = clock.ttl - clock.interval - KILL_MARGIN
    if spare <= 0:
        raise ValueError(
            f"a TTL of {ttl:g} s renewed every {clock.interval:g} s leaves no time to stop the"
            f" command {KILL_MARGIN:g} s before the lease may expire: give a longer --ttl"
        )
    return min(grace, spare / 2)


def _say(message: str) -> None:
    print(f"tenure run: {message}", file=sys.stderr, flush=True)


def _service_error(error: TenureError) -> int:
    if isinstance(error, TransportError | ServiceUnavailable):
        _say(f"service unreachable: {error}")
        return EXIT_UNREACHABLE
    _say(f"the service refused: {error}")
    return EXIT_USAGE


def _environment(job: str, window: str, handle: LeaseHandle, attempt: int) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        TENURE_JOB=job,
        TENURE_LEASE=handle.name,
        TENURE_WINDOW=window,
        TENURE_GENERATION=str(handle.generation),
        TENURE_ATTEMPT=str(attempt),
        TENURE_IDEMPOTENCY_KEY=idempotency_key(job, window),
        TENURE_FENCING_TOKEN=handle.fencing_token,
    )
    return environment


class _Signals:
    """SIGINT/SIGTERM: before the command starts they stop `tenure run`; after, they are
    forwarded to the command and everything it started, and the stop has begun."""

    def __init__(self) -> None:
        self.child: ProcessTree | None = None
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _Signals:
        for signum in FORWARDED_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *_: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal() returned

    def _handle(self, signum: int, _: FrameType | None) -> None:
        if self.child is None:
            raise _Interrupted(signum)
        self.received = signum
        self.child.signal(signum)


def run_command(client: Tenure, options: RunOptions) -> int:
    """Run the command once for its window; the exit status `tenure run` should end with."""
    try:
        with _Signals() as signals, subreaper():
            return _run(client, options, signals)
    except _Interrupted as interrupted:
        _say(f"interrupted by signal {interrupted.signum} before the command started")
        return 128 + interrupted.signum


def _window(client: Tenure, window: str | Schedule) -> str:
    if isinstance(window, str):
        return window
    return client.resolve_window(window.cron, window.tz, window.key)


def _run(client: Tenure, options: RunOptions, signals: _Signals) -> int:
    name = options.job if options.lease is None else options.lease
    try:
        window = _window(client, options.window)
        if options.register is not None:
            client.register_job(options.job, options.register)
    except TenureError as error:
        return _service_error(error)
    handle = client.lease(name, options.ttl, wait=options.wait, renew_every=options.renew_every)
    try:
        handle.__enter__()
    except LeaseHeld as held:
        _say(f"skipped: lease {name!r} is held by {held.holder}")
        return 0 if options.skip_ok else EXIT_HELD
    except TenureError as error:
        return _service_error(error)
    try:
        return _claim_and_run(client, options, window, handle, signals)
    finally:
        # Releases; a loss was already reported and decided the exit status.
        with contextlib.suppress(LeaseLost):
            handle.__exit__(None, None, None)


def _claim_and_run(
    client: Tenure, options: RunOptions, window: str, handle: LeaseHandle, signals: _Signals
) -> int:
    try:
        claimed = client.claim_window(options.job, window, handle)
    except WindowCompleted:
        _say(f"skipped: window {window!r} of {options.job!r} is already completed")
        return 0 if options.skip_ok else EXIT_COMPLETED
    except TenureError as error:
        return _service_error(error)
    environment = _environment(options.job, window, handle, claimed.attempt)
    try:
        signals.child = ProcessTree(options.command, environment)
    except FileNotFoundError as error:
        _say(f"cannot run the command: {error}")
        return EXIT_NOT_FOUND
    except OSError as error:
        _say(f"cannot run the command: {error}")
        return EXIT_CANNOT_EXECUTE
    returncode = _supervise(signals.child, handle, options.grace, signals)
    if returncode is None:
        return EXIT_LOST
    if returncode != 0:
        return child_exit_code(returncode)
    return _complete(client, options.job, window, handle)


def _supervise(
    tree: ProcessTree, handle: LeaseHandle, grace: float, signals: _Signals
) -> int | None:
    """Wait for the command, then stop whatever of it is left (see the module docstring). The
    command's status, or None when the lease stopped it."""
    stopped = _watch(tree, handle, grace, signals)
    if not stopped and signals.received is None and not tree.ended():
        _say("the command exited: stopping what it left running")
    killed = _stop(tree, handle, grace, terminated=signals.received is not None)
    return None if stopped or killed else tree.process.wait()


def _watch(tree: ProcessTree, handle: LeaseHandle, grace: float, signals: _Signals) -> bool:
    """Until the command exits or a forwarded signal asks it to stop; True when, before that,
    the lease was lost or renewals failed until `grace` before the deadline."""
    while tree.returncode is None and signals.received is None:
        tree.reap()
        now, kill_at = time.monotonic(), handle.deadline - KILL_MARGIN
        if handle.lost:
            return True  # `_stop` says why
        if now >= kill_at - grace:
            _say(
                f"no renewal succeeded for {now - handle.deadline + handle.ttl:.1f} s: stopping"
                " the command before the lease may expire"
            )
            return True
        handle.wait_lost(min(POLL_SECONDS, kill_at - grace - now))
    return False


def _stop(tree: ProcessTree, handle: LeaseHandle, grace: float, *, terminated: bool) -> bool:
    """Until the command and everything it started are gone: SIGTERM (unless a forwarded signal
    already asked them to stop), SIGKILL `grace` later or `KILL_MARGIN` before the deadline,
    whichever comes first, and SIGKILL at once whenever the lease is lost. True when the loss
    killed the command itself (not only what it left running)."""
    since, killing, killed = time.monotonic(), False, False
    while not tree.ended():
        now = time.monotonic()
        if not killing and handle.lost:
            _say(f"lease lost ({handle.lost_reason}): its turn is over: SIGKILL")
            killing, killed = True, tree.returncode is None
        elif not killing and now >= min(since + grace, handle.deadline - KILL_MARGIN):
            _say("the command did not stop in time: SIGKILL")
            killing = True
        if killing or not terminated:
            tree.signal(signal.SIGKILL if killing else signal.SIGTERM)
            terminated = True
        if handle.lost:
            time.sleep(POLL_SECONDS)
        else:
            handle.wait_lost(POLL_SECONDS)
    return killed


def _complete(client: Tenure, job: str, window: str, handle: LeaseHandle) -> int:
    try:
        handle.check()
        client.complete_window(job, window, handle)
    except LeaseLost as error:
        _say(f"the command succeeded but the lease was lost meanwhile: {error}")
        return EXIT_LOST
    except TenureError as error:
        _say("the command succeeded but its window could not be completed")
        return _service_error(error)
    return 0
