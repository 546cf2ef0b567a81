"""The database's clock, under the nemesis's control (F11): the harness's PostgreSQL servers run
under libfaketime, preloaded, reading their offset from one control file that `DatabaseClock`
rewrites while they run. The primary and every standby read the same file, so a failover is not
itself a clock step.

    clock = DatabaseClock(run / "database-clock")   # offset 0
    clock.environment                               # what a server is started with
    clock.step(1.5)                                 # the database's clock is now 1.5 s ahead

Only the wall clock is moved (`FAKETIME_DONT_FAKE_MONOTONIC`): PostgreSQL's own intervals stay
real, as under an NTP step. `FAKETIME_NO_CACHE` makes every read of the clock read the file, so
a step applies at once in every backend. The file is replaced by a rename, so a reader never sees
it half written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

# Debian's `faketime` package (libfaketime) puts the preload library here.
LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def available() -> bool:
    return LIBRARY.is_file()


class DatabaseClock:
    """The offset of the database's wall clock from the machine's, in seconds."""

    def __init__(self, path: Path) -> None:
        if not available():
            raise RuntimeError(f"F11 needs libfaketime ({LIBRARY}): apt-get install faketime")
        self.path = path
        self.offset = 0.0
        self._write(0.0)

    @property
    def environment(self) -> Mapping[str, str]:
        return {
            "LD_PRELOAD": str(LIBRARY),
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def step(self, offset: float) -> float:
        """Set the offset (seconds, + ahead); returns when it was set (monotonic)."""
        self._write(offset)
        self.offset = offset
        return time.monotonic()

    def _write(self, offset: float) -> None:
        staged = self.path.with_suffix(".tmp")
        staged.write_text(f"{offset:+.6f}\n", encoding="utf-8")
        staged.chmod(0o644)  # the servers run as another user
        os.replace(staged, self.path)
