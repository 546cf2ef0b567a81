"""The checker's properties, one module per group (`chaos.checker.check` runs them all), and
what they share: the violation record and views of a history."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from chaos.history import History, Operation

# Event kinds that start a new generation of a lease.
GRANT_KINDS = frozenset({"acquired", "taken_over", "force_released"})
HOLDING_KINDS = frozenset({"acquired", "taken_over"})
PROBE_PROCESS = "probe"
FINAL_PROCESS = "final"


@dataclass(frozen=True, slots=True)
class Violation:
    property: int
    message: str
    # Within what a database clock step (F11) explains (chaos.properties.clock): reported as a
    # figure, not counted as a violation.
    excused: bool = False
    overlap: float = 0.0  # property 3: how long the belief outlasted the next grant (seconds)


def grants(history: History) -> list[Operation]:
    """Acquires answered ok: each names the holding the client was told it has."""
    return [
        op
        for op in history.ops("acquire")
        if op.outcome == "ok" and op.generation is not None and op.received is not None
    ]


def by_lease(ops: Iterable[Operation]) -> dict[str, list[Operation]]:
    grouped: dict[str, list[Operation]] = defaultdict(list)
    for op in ops:
        grouped[op.lease].append(op)
    return grouped


def received(op: Operation) -> float:
    return op.received if op.received is not None else float("inf")


def next_grant(history: History) -> dict[tuple[str, int], Operation]:
    """(lease, g) -> of the grants of a generation above g, the one whose answer came first."""
    found: dict[tuple[str, int], Operation] = {}
    for lease, ops in by_lease(grants(history)).items():
        ops.sort(key=lambda op: op.generation or 0, reverse=True)
        earliest: Operation | None = None
        position = 0
        while position < len(ops):
            generation = ops[position].generation or 0
            if earliest is not None:
                found[(lease, generation)] = earliest
            while position < len(ops) and ops[position].generation == generation:
                candidate = ops[position]
                if earliest is None or received(candidate) < received(earliest):
                    earliest = candidate
                position += 1
    return found


def holders(history: History) -> dict[tuple[str, int], str]:
    """(lease, g) -> the holder the database's event log says generation g was granted to."""
    return {
        (event.lease, event.generation): event.holder
        for event in history.facts.lease_events
        if event.kind in HOLDING_KINDS
    }
