"""The database clock's steps (F11), as the nemesis recorded them, and what they excuse.

A step moves the database's clock, not the machine's: the client's beliefs (CLOCK_MONOTONIC) stay
true, while every database instant after a step is off by the offset then in effect.

- **Forward** (the offset rises by Δ): a holding granted before lapses Δ early in real time, so
  the next grant can come while its holder, which renewed on time, still believes it holds it.
  Property 3 then measures the overlap: a belief that outlasts the next grant's receipt by no
  more than the clock's rise between the belief's start and that receipt is an *overlap* (a
  figure), not a violation; anything longer still is a violation.
- **Backward** (the offset falls from o1 to o2 at the machine's wall-clock instant w): holdings
  last up to o1 - o2 longer in real time (property 7's bound grows by the largest fall), and the
  database read every instant of [w + o2, w + o1] twice, once before the step and once after.
  Two database instants in real order can read reversed only if both lie in such a range: an
  instant a before the step reads at most w + o1, an instant b after it at least w + o2, and
  a > b. Properties 2 and 4, which compare database instants with each other, excuse a reversal
  only then (ranges that overlap, as a strobe's do, are merged; `MARGIN` covers the moment a
  backend takes to see the new file), and count each one (`excused`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from chaos.history import History

MARGIN = 0.1  # seconds: a backend reads the control file at its next clock read


@dataclass(frozen=True)
class ClockSteps:
    """The offset (seconds) the database's clock had over monotonic time."""

    times: tuple[float, ...] = ()  # monotonic instants of the steps, in order
    offsets: tuple[float, ...] = ()  # the offset from each step on (0 before the first)
    walls: tuple[float, ...] = ()  # the machine's wall clock at each step (epoch seconds)

    @classmethod
    def of(cls, history: History) -> ClockSteps:
        steps = sorted(
            (event.t, float(event.detail["offset"]), float(event.detail["wall"]))
            for event in history.faults
            if event.phase == "step"
        )
        return cls(
            tuple(step[0] for step in steps),
            tuple(step[1] for step in steps),
            tuple(step[2] for step in steps),
        )

    @property
    def reread(self) -> list[tuple[int, int]]:
        """The database instants (microseconds) a backward step made the database read twice,
        overlapping ranges merged."""
        ranges, previous = [], 0.0
        for offset, wall in zip(self.offsets, self.walls, strict=True):
            if offset < previous:
                low, high = wall + offset - MARGIN, wall + previous + MARGIN
                ranges.append((round(low * 1e6), round(high * 1e6)))
            previous = offset
        merged: list[tuple[int, int]] = []
        for low, high in sorted(ranges):
            if merged and low <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        return merged

    def may_reverse(self, earlier: int, later: int) -> bool:
        """Whether database instants `earlier` (read as the larger) and `later` may be in the
        other real order: both lie in one range a backward step made the database read twice."""
        return any(
            low <= min(earlier, later) and max(earlier, later) <= high for low, high in self.reread
        )

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
