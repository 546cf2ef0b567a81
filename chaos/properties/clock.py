"""The database clock's steps (F11), as the nemesis recorded them, and what they excuse.

A step moves the database's clock, not the machine's: the client's beliefs (CLOCK_MONOTONIC) stay
true, while every database instant after a step is off by the offset then in effect.

- **Forward** (the offset rises by Δ): a holding granted before lapses Δ early in real time, so
  the next grant can come while its holder, which renewed on time, still believes it holds it.
  Property 3 then measures the overlap: a belief that outlasts the next grant's receipt by no
  more than the clock's rise between the belief's start and that receipt is an *overlap* (a
  figure), not a violation; anything longer still is a violation.
- **Backward** (the offset falls by Δ): holdings last up to Δ longer in real time (property 7's
  bound grows by the largest fall), and database instants of the same real order can come out
  reversed by up to Δ: properties 2 and 4, which compare database instants with each other,
  allow the largest fall of the run, and count each comparison that needed it (`excused`).
  Not only the instants near a recorded step: a backend has been seen reading its clock at the
  previous offset for up to a step's whole length after the control file changed (in runs under
  load; not reproduced on a quiet server, cause not found), so when a step took effect in a given
  backend is not known — what is known is that every offset lay within the steps' range.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from chaos.history import History


@dataclass(frozen=True)
class ClockSteps:
    """The offset (seconds) the database's clock had over monotonic time."""

    times: tuple[float, ...] = ()  # monotonic instants of the steps, in order
    offsets: tuple[float, ...] = ()  # the offset from each step on (0 before the first)

    @classmethod
    def of(cls, history: History) -> ClockSteps:
        steps = sorted(
            (event.t, float(event.detail["offset"]))
            for event in history.faults
            if event.phase == "step"
        )
        return cls(tuple(t for t, _ in steps), tuple(offset for _, offset in steps))

    def offset_at(self, t: float) -> float:
        index = bisect.bisect_right(self.times, t) - 1
        return 0.0 if index < 0 else self.offsets[index]

    def rise(self, start: float, end: float) -> float:
        """How far the clock ran ahead between `start` and `end`: the highest offset in effect
        then, less the lowest (0 when it did not move)."""
        first = bisect.bisect_right(self.times, start)
        last = bisect.bisect_right(self.times, end)
        seen = [self.offset_at(start), *self.offsets[first:last]]
        return max(seen) - min(seen)

    @property
    def largest_fall(self) -> float:
        """The largest backward step of the run (seconds; 0 without one)."""
        previous, largest = 0.0, 0.0
        for offset in self.offsets:
            largest = max(largest, previous - offset)
            previous = offset
        return largest

    def __bool__(self) -> bool:
        return bool(self.times)
