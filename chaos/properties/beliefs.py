"""Property 3: no client belief (nor side effect) outlasts the receipt of the next grant."""

from __future__ import annotations

from collections import defaultdict

from chaos.history import History
from chaos.properties import Violation, next_grant, received

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
        if later is not None and end > received(later):
            found.append(
                Violation(
                    3,
                    f"{lease}: {process} believed it held generation {generation} until "
                    f"{end - received(later):.3f} s after {later.process} was granted "
                    f"{later.generation}",
                )
            )
    for effect in history.effects:
        later = later_grants.get((effect.lease, effect.generation))
        own = beliefs.get((effect.process, effect.lease, effect.generation), [])
        if later is not None and effect.t > received(later):
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
