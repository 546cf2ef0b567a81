"""Property 3: no client belief (nor side effect) outlasts the receipt of the next grant."""

from __future__ import annotations

from collections import defaultdict

from chaos.history import History
from chaos.properties import Violation, next_grant, received
from chaos.properties.clock import ClockSteps

BeliefKey = tuple[str, str, int]  # process, lease, generation


def _rebuilt(history: History) -> list[tuple[BeliefKey, list[float]]]:
    """Each holding's belief as its client's operations tell it: from the acquire's send to the
    latest deadline answered (acquire or renew), cut short at the send of a release."""
    holdings: list[tuple[BeliefKey, list[float]]] = []
    current: dict[BeliefKey, list[float]] = {}
    for op in history.operations:  # in the order they were sent
        if op.generation is None:
            continue
        key = (op.process, op.lease, op.generation)
        deadline = op.deadline if op.outcome == "ok" else None  # what an answer told it
        span = current.get(key)
        if op.op == "acquire" and deadline is not None:
            current[key] = [op.sent, deadline]
            holdings.append((key, current[key]))
        elif span is not None and op.op == "renew" and deadline is not None:
            span[1] = max(span[1], deadline)
        elif span is not None and op.op == "release":
            span[1] = min(span[1], op.sent)
    return holdings


def _beliefs(history: History) -> dict[BeliefKey, list[tuple[float, float]]]:
    """(process, lease, g) -> the (start, end) spans of the client's belief, one per holding: as
    the client recorded it when it stopped believing, else rebuilt from its operations (a client
    that died holding, a history of operations only). One client can hold one generation more
    than once: it walked away from it (or its release was refused) and acquired it again."""
    beliefs: dict[BeliefKey, list[tuple[float, float]]] = defaultdict(list)
    recorded: set[tuple[str, str, int, float]] = set()
    for belief in history.beliefs:
        key = (belief.process, belief.lease, belief.generation)
        beliefs[key].append((belief.start, belief.end))
        recorded.add((*key, belief.start))  # a recorded belief starts at its acquire's send
    for key, (start, end) in _rebuilt(history):
        if (*key, start) not in recorded:
            beliefs[key].append((start, end))
    return beliefs


def check_beliefs(history: History, clock: ClockSteps | None = None) -> list[Violation]:
    """`clock`: the database clock's steps; an overlap no longer than the clock's rise from the
    belief's start to the next grant's receipt is an excused overlap (the clock's doing)."""
    clock = clock or ClockSteps()
    found = []
    later_grants = next_grant(history)
    beliefs = _beliefs(history)
    for (process, lease, generation), spans in beliefs.items():
        later = later_grants.get((lease, generation))
        end = max(end for _, end in spans)
        if later is not None and end > received(later):
            start = min(start for start, _ in spans)
            overlap = end - received(later)
            found.append(
                Violation(
                    3,
                    f"{lease}: {process} believed it held generation {generation} until "
                    f"{overlap:.3f} s after {later.process} was granted {later.generation}",
                    overlap <= clock.rise(start, received(later)),
                    overlap,
                )
            )
    for effect in history.effects:
        later = later_grants.get((effect.lease, effect.generation))
        own = beliefs.get((effect.process, effect.lease, effect.generation), [])
        if later is not None and effect.t > received(later):
            start = min((start for start, _ in own), default=effect.t)
            found.append(
                Violation(
                    3,
                    f"{effect.lease}: {effect.process} wrote a side effect under generation "
                    f"{effect.generation} {effect.t - received(later):.3f} s after "
                    f"{later.process} was granted {later.generation}",
                    effect.t - received(later) <= clock.rise(start, received(later)),
                    effect.t - received(later),
                )
            )
        elif own and not any(start <= effect.t <= end for start, end in own):
            found.append(
                Violation(3, f"{effect.lease}: {effect.process} wrote outside its own belief")
            )
    return found
