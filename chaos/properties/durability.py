"""Property 5: acknowledged grants survive database restarts and failovers."""

from __future__ import annotations

from chaos.history import History
from chaos.properties import HOLDING_KINDS, Violation, grants, received


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
            if op.outcome == "ok" and op.generation and received(op) < probe.t:
                acknowledged[op.lease] = max(acknowledged.get(op.lease, 0), op.generation)
        for lease, generation in sorted(acknowledged.items()):
            after = probe.generations.get(lease)
            if after is None or after < generation:
                event = "failover" if probe.mode == "failover" else f"{probe.mode} restart"
                found.append(
                    Violation(
                        5,
                        f"{lease}: generation {after} after a database {event}, below the "
                        f"acknowledged {generation}",
                    )
                )
    return found
