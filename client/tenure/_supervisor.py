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
later than that); the command's process group gets SIGTERM `--grace` seconds before it — when no
renewal has succeeded by then — and SIGKILL `KILL_MARGIN` before it. A loss noticed late (a
`lease-lost` answer, or `tenure run` itself paused) leaves the command only what remains before
the deadline: SIGKILL at once if it has passed. The grace is at most half the time between a
renewal falling due and the SIGKILL, so that a renewal that is merely slow never stops it.

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

The command runs in its own process group, so that stopping it stops what it started. If
`tenure run` itself is killed with SIGKILL, nothing stops the command: its lease expires after
the TTL and another run may start, which is what the fencing token is for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
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
    lease: str | None = None
    wait: float = 0.0
    # At most `stop_grace(ttl, renew_every, …)`: a longer one would stop a healthy command.
    grace: float = DEFAULT_GRACE
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


class _Child:
    """The command, in its own process group; signals go to the whole group."""

    def __init__(self, command: Sequence[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(command, env=environment, process_group=0)  # noqa: S603 - running the given command is the point

    def signal(self, signum: int) -> None:
        # A group that is gone: the command and everything it started have exited.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    def stop(self, kill_at: float) -> int:
        """SIGTERM, then SIGKILL at `kill_at` (a monotonic time); the command's exit status."""
        self.signal(signal.SIGTERM)
        try:
            return self.process.wait(max(0.0, kill_at - time.monotonic()))
        except subprocess.TimeoutExpired:
            _say("the command did not stop in time: SIGKILL")
        self.signal(signal.SIGKILL)
        return self.process.wait()


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
    forwarded to the command's process group."""

    def __init__(self) -> None:
        self.child: _Child | None = None
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
        self.child.signal(signum)


def run_command(client: Tenure, options: RunOptions) -> int:
    """Run the command once for its window; the exit status `tenure run` should end with."""
    try:
        with _Signals() as signals:
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
        signals.child = _Child(options.command, environment)
    except FileNotFoundError as error:
        _say(f"cannot run the command: {error}")
        return EXIT_NOT_FOUND
    except OSError as error:
        _say(f"cannot run the command: {error}")
        return EXIT_CANNOT_EXECUTE
    returncode = _supervise(signals.child, handle, options.grace)
    if returncode is None:
        return EXIT_LOST
    if returncode != 0:
        return child_exit_code(returncode)
    return _complete(client, options.job, window, handle)


def _supervise(child: _Child, handle: LeaseHandle, grace: float) -> int | None:
    """Wait for the command; stop it so that it is dead before the lease may expire (see the
    module docstring). Its status, or None when stopped."""
    while True:
        returncode = child.process.poll()
        if returncode is not None:
            return returncode
        now, kill_at = time.monotonic(), handle.deadline - KILL_MARGIN
        if handle.lost:
            _say(f"lease lost ({handle.lost_reason}): stopping the command")
        elif now >= kill_at - grace:
            _say(
                f"no renewal succeeded for {now - handle.deadline + handle.ttl:.1f} s: stopping"
                " the command before the lease may expire"
            )
        else:
            handle.wait_lost(min(POLL_SECONDS, kill_at - grace - now))
            continue
        child.stop(min(now + grace, kill_at))
        return None


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
