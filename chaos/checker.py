"""The checker: the seven properties of issue 5, as a pure function of a recorded `History`.

`check(history)` returns every violation it can prove, by property:

1. Generations: per lease, every generation acknowledged to a client belongs to one holding (one
   holder, one start); a grant answered before another was sent has the lower generation; the
   database's own event log has strictly increasing generations per lease.
2. Validity: a holding's database validity interval [acquired_at, final expires_at] ends no later
   than the next generation's acquired_at.
3. Beliefs: no client believed it held a generation (send time + TTL, or until it released), nor
   wrote a side effect under it, after a higher generation of that lease was granted.
4. Fenced resources: committed writes of a resource are in non-decreasing generation order, each
   under a generation its writer was granted; a same-database fenced write commits before the
   next generation of its lease is granted.
5. Durability: every holding acknowledged to a client is in the database's event log, and right
   after a database restart or failover no lease's generation is below one acknowledged before
   it.
6. Windows: at most one completion per window, by the holding of its latest claim.
7. Liveness: after each fault heals, an acquire succeeds within the bound; at the end, every
   lease of the workload can be acquired.

**What is compared with what, and why it is sound.** Client instants are CLOCK_MONOTONIC, one
clock for every process of the machine; database instants are the database's clock. The two are
never mixed. A grant's real instant is only known to lie between its request's send and its
answer's receipt by the granting client: comparing a belief with the grant's *send* time would
flag correct runs (a waiting acquire is sent long before it is granted), so property 3 flags a
belief only when it outlasts the *receipt* of a later grant — then the overlap is certain. The
reasoning that makes a correct client pass: its deadline is send + TTL; the database set the
expiry to now() + TTL with now() later than the send; the next grant needs now() ≥ expiry, and
its answer arrives later still. Property 1's order check is sound the same way (answered before
sent ⇒ granted before). Properties 2 and 4 compare database instants with each other only.

**Database clock steps (F11)** break the last link of that reasoning on purpose: what a step can
explain is excused and reported as a figure (`Verdict.excused`), never counted, and only when
`clock=True` (`chaos.properties.clock` says what and why); with `clock=False` the checker demands
what it demands without steps — the negative control.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chaos.history import History
from chaos.properties import Violation
from chaos.properties.beliefs import check_beliefs
from chaos.properties.clock import ClockSteps
from chaos.properties.durability import check_durability
from chaos.properties.generations import check_generations, check_validity
from chaos.properties.liveness import Recovery, check_liveness, recovery_times
from chaos.properties.windows import check_windows
from chaos.properties.writes import check_fenced_writes

__all__ = ["PROPERTIES", "Recovery", "Verdict", "Violation", "check"]

PROPERTIES: Mapping[int, str] = {
    1: "unique, increasing generations",
    2: "validity intervals do not overlap",
    3: "client beliefs end before the next grant",
    4: "fenced writes in generation order",
    5: "acknowledged grants are durable",
    6: "one completion per window, by the latest claim",
    7: "liveness after faults heal",
}


@dataclass(frozen=True)
class Verdict:
    violations: tuple[Violation, ...]
    recoveries: tuple[Recovery, ...]
    excused: tuple[Violation, ...] = ()  # what a database clock step explains (F11)

    def count(self, number: int) -> int:
        return sum(1 for violation in self.violations if violation.property == number)

    @property
    def ok(self) -> bool:
        return not self.violations


def check(history: History, *, liveness_bound: float = 8.0, clock: bool = True) -> Verdict:
    """Every violation of the seven properties that `history` proves. `liveness_bound`: seconds
    within which an acquire must succeed after a heal (the longest TTL plus a small margin), to
    which the database clock's largest backward step is added. `clock`: excuse what the
    database clock's steps explain (False: count it as violations)."""
    steps = ClockSteps.of(history) if clock else ClockSteps()
    fall = steps.largest_fall
    recoveries = recovery_times(history)
    found = [
        *check_generations(history),
        *check_validity(history, fall),
        *check_beliefs(history, steps),
        *check_fenced_writes(history, fall),
        *check_durability(history),
        *check_windows(history),
        *check_liveness(history, recoveries, liveness_bound + fall),
    ]
    violations = tuple(violation for violation in found if not violation.excused)
    excused = tuple(violation for violation in found if violation.excused)
    return Verdict(violations, tuple(recoveries), excused)
