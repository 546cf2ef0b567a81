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
   after a database restart no lease's generation is below one acknowledged before it.
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
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chaos.history import History, Operation, ResourceWrite

PROPERTIES: Mapping[int, str] = {
    1: "unique, increasing generations",
    2: "validity intervals do not overlap",
    3: "client beliefs end before the next grant",
    4: "fenced writes in generation order",
    5: "acknowledged grants are durable",
    6: "one completion per window, by the latest claim",
    7: "liveness after faults heal",
}
# Event kinds that start a new generation of a lease.
GRANT_KINDS = frozenset({"acquired", "taken_over", "force_released"})
HOLDING_KINDS = frozenset({"acquired", "taken_over"})
PROBE_PROCESS = "probe"
FINAL_PROCESS = "final"


@dataclass(frozen=True, slots=True)
class Violation:
    property: int
    message: str


@dataclass(frozen=True, slots=True)
class Recovery:
    """How long after a fault healed the first acquire succeeded (None: none did)."""

    fault: str
    healed: float
    seconds: float | None


@dataclass(frozen=True)
class Verdict:
    violations: tuple[Violation, ...]
    recoveries: tuple[Recovery, ...]

    def count(self, number: int) -> int:
        return sum(1 for violation in self.violations if violation.property == number)

    @property
    def ok(self) -> bool:
        return not self.violations


def check(history: History, *, liveness_bound: float = 8.0) -> Verdict:
    """Every violation of the seven properties that `history` proves. `liveness_bound`: seconds
    within which an acquire must succeed after a heal (the longest TTL plus a small margin)."""
    recoveries = recovery_times(history)
    violations = [
        *check_generations(history),
        *check_validity(history),
        *check_beliefs(history),
        *check_fenced_writes(history),
        *check_durability(history),
        *check_windows(history),
        *check_liveness(history, recoveries, liveness_bound),
    ]
    return Verdict(tuple(violations), tuple(recoveries))


# Shared views --------------------------------------------------------------------------------


def grants(history: History) -> list[Operation]:
    """Acquires answered ok: each names the holding the client was told it has."""
    return [
        op
        for op in history.ops("acquire")
        if op.outcome == "ok" and op.generation is not None and op.received is not None
    ]


def _by_lease(ops: Iterable[Operation]) -> dict[str, list[Operation]]:
    grouped: dict[str, list[Operation]] = defaultdict(list)
    for op in ops:
        grouped[op.lease].append(op)
    return grouped


def _received(op: Operation) -> float:
    return op.received if op.received is not None else float("inf")


def next_grant(history: History) -> dict[tuple[str, int], Operation]:
    """(lease, g) -> of the grants of a generation above g, the one whose answer came first."""
    found: dict[tuple[str, int], Operation] = {}
    for lease, ops in _by_lease(grants(history)).items():
        ops.sort(key=lambda op: op.generation or 0, reverse=True)
        earliest: Operation | None = None
        position = 0
        while position < len(ops):
            generation = ops[position].generation or 0
            if earliest is not None:
                found[(lease, generation)] = earliest
            while position < len(ops) and ops[position].generation == generation:
                candidate = ops[position]
                if earliest is None or _received(candidate) < _received(earliest):
                    earliest = candidate
                position += 1
    return found


# 1. Generations ------------------------------------------------------------------------------


def check_generations(history: History) -> list[Violation]:
    found: list[Violation] = []
    holdings: dict[tuple[str, int], set[tuple[str, int | None]]] = defaultdict(set)
    for op in grants(history):
        holdings[(op.lease, op.generation or 0)].add((op.holder, op.acquired_at))
    for (lease, generation), seen in sorted(holdings.items()):
        if len(seen) > 1:
            names = ", ".join(sorted(f"{holder}@{start}" for holder, start in seen))
            found.append(Violation(1, f"{lease}: generation {generation} granted to {names}"))
    found.extend(_grant_order(history))
    found.extend(_event_order(history))
    return found


def _grant_order(history: History) -> list[Violation]:
    found = []
    for lease, ops in _by_lease(grants(history)).items():
        by_received = sorted(ops, key=_received)
        highest: Operation | None = None  # the highest generation answered before `op` was sent
        position = 0
        for op in sorted(ops, key=lambda op: op.sent):
            while position < len(by_received) and _received(by_received[position]) < op.sent:
                answered = by_received[position]
                if highest is None or (answered.generation or 0) > (highest.generation or 0):
                    highest = answered
                position += 1
            if highest is not None and (highest.generation or 0) > (op.generation or 0):
                found.append(
                    Violation(
                        1,
                        f"{lease}: {op.process} was granted generation {op.generation} after "
                        f"{highest.process} had been granted {highest.generation}",
                    )
                )
    return found


def _event_order(history: History) -> list[Violation]:
    found = []
    last: dict[str, int] = {}
    for event in sorted(history.facts.lease_events, key=lambda event: event.id):
        if event.kind not in GRANT_KINDS:
            continue
        previous = last.get(event.lease)
        if previous is not None and event.generation <= previous:
            found.append(
                Violation(
                    1,
                    f"{event.lease}: event {event.id} ({event.kind}) has generation "
                    f"{event.generation} after generation {previous}",
                )
            )
        last[event.lease] = max(event.generation, previous or 0)
    return found


# 2. Validity intervals -----------------------------------------------------------------------


def _holding_ends(history: History) -> dict[tuple[str, int], int]:
    """(lease, g) -> a lower bound of the holding's final expires_at (database microseconds)."""
    ends: dict[tuple[str, int], int] = {}
    unknown_release: set[tuple[str, int]] = set()
    released: dict[tuple[str, int], int] = {}
    for op in history.ops("acquire", "renew", "release"):
        if op.generation is None:
            continue
        key = (op.lease, op.generation)
        if op.op == "release" and op.outcome == "unknown":
            unknown_release.add(key)  # it may have cut the expiry short: no bound
        elif op.outcome == "ok" and op.expires_at is not None:
            if op.op == "release":
                released[key] = op.expires_at
            else:
                ends[key] = max(ends.get(key, op.expires_at), op.expires_at)
    ends.update(released)
    for key in unknown_release:
        if key not in released:
            ends.pop(key, None)
    return ends


def _holding_starts(history: History) -> dict[tuple[str, int], int]:
    """(lease, g) -> acquired_at: from an acquire's answer, else the event's (later) instant."""
    starts = {
        (event.lease, event.generation): event.at
        for event in history.facts.lease_events
        if event.kind in HOLDING_KINDS
    }
    for op in grants(history):
        if op.acquired_at is not None:
            key = (op.lease, op.generation or 0)
            starts[key] = min(starts.get(key, op.acquired_at), op.acquired_at)
    return starts


def check_validity(history: History) -> list[Violation]:
    found = []
    ends, starts = _holding_ends(history), _holding_starts(history)
    generations: dict[str, list[int]] = defaultdict(list)
    for lease, generation in starts:
        generations[lease].append(generation)
    for lease, numbers in generations.items():
        numbers.sort()
        for current, following in itertools.pairwise(numbers):
            end = ends.get((lease, current))
            start = starts[(lease, following)]
            if end is not None and start < end:
                found.append(
                    Violation(
                        2,
                        f"{lease}: generation {following} began {(end - start) / 1e6:.3f} s "
                        f"before generation {current} expired",
                    )
                )
    return found


# 3. Beliefs ----------------------------------------------------------------------------------

BeliefKey = tuple[str, str, int]  # process, lease, generation


def _beliefs(history: History) -> dict[BeliefKey, list[tuple[float, float]]]:
    """(process, lease, g) -> the (start, end) spans of the client's belief: as recorded, else
    rebuilt from its operations (the latest deadline, cut short by a release). One client can
    hold one generation more than once: it walked away from it and acquired it again."""
    beliefs: dict[BeliefKey, list[tuple[float, float]]] = defaultdict(list)
    for belief in history.beliefs:
        key = (belief.process, belief.lease, belief.generation)
        beliefs[key].append((belief.start, belief.end))
    deadlines: dict[BeliefKey, tuple[float, float]] = {}
    released: dict[BeliefKey, float] = {}
    for op in history.operations:
        if op.generation is None:
            continue
        key = (op.process, op.lease, op.generation)
        if op.op in ("acquire", "renew") and op.outcome == "ok" and op.deadline is not None:
            start, end = deadlines.get(key, (op.sent, op.deadline))
            deadlines[key] = (min(start, op.sent), max(end, op.deadline))
        elif op.op == "release":
            released.setdefault(key, op.sent)
    for key, (start, end) in deadlines.items():
        if key not in beliefs:
            beliefs[key].append((start, min(end, released.get(key, end))))
    return beliefs


def check_beliefs(history: History) -> list[Violation]:
    found = []
    later_grants = next_grant(history)
    beliefs = _beliefs(history)
    for (process, lease, generation), spans in beliefs.items():
        later = later_grants.get((lease, generation))
        end = max(end for _, end in spans)
        if later is not None and end > _received(later):
            found.append(
                Violation(
                    3,
                    f"{lease}: {process} believed it held generation {generation} until "
                    f"{end - _received(later):.3f} s after {later.process} was granted "
                    f"{later.generation}",
                )
            )
    for effect in history.effects:
        later = later_grants.get((effect.lease, effect.generation))
        own = beliefs.get((effect.process, effect.lease, effect.generation), [])
        if later is not None and effect.t > _received(later):
            found.append(
                Violation(
                    3,
                    f"{effect.lease}: {effect.process} wrote a side effect under generation "
                    f"{effect.generation} after {later.process} was granted {later.generation}",
                )
            )
        elif own and not any(start <= effect.t <= end for start, end in own):
            found.append(
                Violation(3, f"{effect.lease}: {effect.process} wrote outside its own belief")
            )
    return found


# 4. Fenced resources -------------------------------------------------------------------------


def _granted_after(history: History) -> dict[tuple[str, int], int]:
    """(lease, g) -> when the database granted the first generation above g (its event)."""
    found: dict[tuple[str, int], int] = {}
    by_lease: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for event in history.facts.lease_events:
        if event.kind in GRANT_KINDS:
            by_lease[event.lease].append((event.generation, event.at))
    for lease, events in by_lease.items():
        events.sort()
        for index, (generation, _) in enumerate(events):
            following = [at for number, at in events[index + 1 :] if number > generation]
            if following:
                found[(lease, generation)] = min(following)
    return found


def _write_order(path: str, resource: str, rows: list[ResourceWrite]) -> list[Violation]:
    exact = all(row.committed is not None for row in rows)
    rows = sorted(rows, key=lambda row: ((row.committed or 0) if exact else 0, row.id))
    found = []
    highest: ResourceWrite | None = None
    for row in rows:
        if highest is not None and row.generation < highest.generation:
            found.append(
                Violation(
                    4,
                    f"{path} {resource}: write {row.id} with generation {row.generation} "
                    f"committed after write {highest.id} with generation {highest.generation}",
                )
            )
        if highest is None or row.generation > highest.generation:
            highest = row
    return found


def check_fenced_writes(history: History) -> list[Violation]:
    facts = history.facts
    holder_of = {
        (event.lease, event.generation): event.holder
        for event in facts.lease_events
        if event.kind in HOLDING_KINDS
    }
    granted_after = _granted_after(history)
    groups: dict[tuple[str, str], list[ResourceWrite]] = defaultdict(list)
    for row in facts.writes:
        groups[(row.path, row.resource)].append(row)
    found = []
    for (path, resource), rows in sorted(groups.items()):
        found.extend(_write_order(path, resource, rows))
        for row in rows:
            holder = holder_of.get((resource, row.generation))
            if holder is not None and holder != row.holder:
                found.append(
                    Violation(
                        4,
                        f"{path} {resource}: write {row.id} by {row.holder} under "
                        f"generation {row.generation}, granted to {holder}",
                    )
                )
            limit = granted_after.get((resource, row.generation))
            if path == "sql" and limit is not None and (row.committed or 0) >= limit:
                found.append(
                    Violation(
                        4,
                        f"sql {resource}: write {row.id} under generation {row.generation} "
                        f"committed {((row.committed or 0) - limit) / 1e6:.3f} s after a "
                        "later generation was granted",
                    )
                )
    return found


# 5. Durability -------------------------------------------------------------------------------


def check_durability(history: History) -> list[Violation]:
    found = []
    facts = history.facts
    if facts.lease_events or facts.settings:  # facts were collected
        recorded = {
            (event.lease, event.generation, event.holder)
            for event in facts.lease_events
            if event.kind in HOLDING_KINDS
        }
        missing = {(op.lease, op.generation or 0, op.holder) for op in grants(history)} - recorded
        for lease, generation, holder in sorted(missing):
            found.append(
                Violation(
                    5,
                    f"{lease}: generation {generation} acknowledged to {holder} is "
                    "not in the database's event log",
                )
            )
    for probe in history.probes:
        acknowledged: dict[str, int] = {}
        for op in history.ops("acquire", "renew"):
            if op.outcome == "ok" and op.generation and _received(op) < probe.t:
                acknowledged[op.lease] = max(acknowledged.get(op.lease, 0), op.generation)
        for lease, generation in sorted(acknowledged.items()):
            after = probe.generations.get(lease)
            if after is None or after < generation:
                found.append(
                    Violation(
                        5,
                        f"{lease}: generation {after} after a {probe.mode} database "
                        f"restart, below the acknowledged {generation}",
                    )
                )
    return found


# 6. Windows ----------------------------------------------------------------------------------


def check_windows(history: History) -> list[Violation]:
    facts = history.facts
    holder_of = {
        (event.lease, event.generation): event.holder
        for event in facts.lease_events
        if event.kind in HOLDING_KINDS
    }
    found = []
    groups: dict[tuple[str, str], list[tuple[int, str, str, int, str]]] = defaultdict(list)
    for event in facts.window_events:
        groups[(event.job, event.window)].append(
            (event.id, event.kind, event.holder, event.generation, event.lease)
        )
    completed: dict[tuple[str, str], tuple[str, int]] = {}
    for (job, window), events in sorted(groups.items()):
        events.sort()
        done = [event for event in events if event[1] == "completed"]
        if len(done) > 1:
            found.append(Violation(6, f"{job}/{window}: completed {len(done)} times"))
        for number, _, holder, generation, lease in done:
            completed[(job, window)] = (holder, generation)
            claims = [event for event in events if event[1] == "claimed" and event[0] < number]
            if not claims or claims[-1][2:4] != (holder, generation):
                found.append(
                    Violation(
                        6,
                        f"{job}/{window}: completed by {holder} generation "
                        f"{generation}, not the holding of its latest claim",
                    )
                )
            granted = holder_of.get((lease, generation))
            if granted is not None and granted != holder:
                found.append(
                    Violation(
                        6,
                        f"{job}/{window}: completed by {holder} under a "
                        f"generation granted to {granted}",
                    )
                )
    for row in facts.windows:
        if row.completed and completed.get((row.job, row.window)) != (row.holder, row.generation):
            found.append(
                Violation(
                    6, f"{row.job}/{row.window}: completed row disagrees with its completion event"
                )
            )
    found.extend(_client_completions(history))
    return found


def _client_completions(history: History) -> list[Violation]:
    holdings: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for op in history.ops("complete"):
        if op.outcome == "ok" and op.window is not None:
            holdings[op.window].add((op.holder, op.generation or 0))
    return [
        Violation(6, f"{window}: completion acknowledged to {len(seen)} holdings")
        for window, seen in sorted(holdings.items())
        if len(seen) > 1
    ]


# 7. Liveness ---------------------------------------------------------------------------------


def recovery_times(history: History) -> list[Recovery]:
    """For each healed fault, the time to the first successful probe acquire after it."""
    probes = sorted(
        (op for op in history.ops("acquire") if op.process == PROBE_PROCESS),
        key=lambda op: op.sent,
    )
    recoveries = []
    for event in history.faults:
        if event.phase != "heal":
            continue
        first = next((op for op in probes if op.sent >= event.t and op.outcome == "ok"), None)
        seconds = None if first is None else _received(first) - event.t
        recoveries.append(Recovery(event.fault, event.t, seconds))
    return recoveries


def check_liveness(
    history: History, recoveries: Sequence[Recovery], bound: float
) -> list[Violation]:
    found = [
        Violation(7, f"after {recovery.fault} healed, no acquire succeeded within {bound:g} s")
        for recovery in recoveries
        if recovery.seconds is None or recovery.seconds > bound
    ]
    for op in history.ops("acquire"):
        if op.process == FINAL_PROCESS and op.outcome != "ok":
            found.append(Violation(7, f"{op.lease}: stuck, the final acquire got {op.error}"))
    return found
