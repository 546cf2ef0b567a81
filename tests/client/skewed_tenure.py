"""`tenure` on a host whose wall clock runs behind, as a separate OS process.

skewed_tenure.py SECONDS ARGS...
    runs `tenure ARGS...` with `datetime.now()` SECONDS behind the real clock. The monotonic
    clock, and the service's and the database's clocks, are left alone: only this host's wall
    clock is wrong, as on a pod whose clock drifted.
"""

from __future__ import annotations

import datetime
import sys
from typing import Self


def _install(seconds: float) -> None:
    behind = datetime.timedelta(seconds=seconds)

    class BehindClock(datetime.datetime):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> Self:
            return super().now(tz) - behind

    # Before tenure is imported, so its `from datetime import datetime` gets this one.
    vars(datetime)["datetime"] = BehindClock


def main(arguments: list[str]) -> None:
    seconds, *rest = arguments
    _install(float(seconds))
    from tenure._cli import main as tenure

    tenure(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
