"""Properties 1 and 2: unique, increasing generations; validity intervals that do not overlap."""

from __future__ import annotations

import itertools
from collections import defaultdict

from chaos.history import History, Operation
from chaos.properties import (
    GRANT_KINDS,
    HOLDING_KINDS,
    Violation,
    by_lease,
    grants,
    received,
)


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
    for lease, ops in by_lease(grants(history)).items():
        by_received = sorted(ops, key=received)
        highest: Operation | None = None  # the highest generation answered before `op` was sent
        position = 0
        for op in sorted(ops, key=lambda op: op.sent):
            while position < len(by_received) and received(by_received[position]) < op.sent:
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


def check_validity(history: History, tolerance: float = 0.0) -> list[Violation]:
    """`tolerance`: seconds the database's clock fell back at most (F11); an overlap no longer
    is excused: the two database instants may be of the right real order."""
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
                        end - start <= tolerance * 1e6,
                    )
                )
    return found
