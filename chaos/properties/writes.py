"""Property 4: fenced resources — committed writes in generation order, by their holders."""

from __future__ import annotations

from collections import defaultdict

from chaos.history import History, ResourceWrite
from chaos.properties import GRANT_KINDS, Violation, holders


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


def _write_order(
    path: str, resource: str, rows: list[ResourceWrite], tolerance: float
) -> list[Violation]:
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
                    tolerance > 0
                    and exact
                    and (row.committed or 0) - (highest.committed or 0) <= tolerance * 1e6,
                )
            )
        if highest is None or row.generation > highest.generation:
            highest = row
    return found


def check_fenced_writes(history: History, tolerance: float = 0.0) -> list[Violation]:
    """`tolerance`: seconds the database's clock fell back at most (F11); commit timestamps
    out of order by no more are excused (`chaos.properties.clock`)."""
    facts, holder_of = history.facts, holders(history)
    granted_after = _granted_after(history)
    groups: dict[tuple[str, str], list[ResourceWrite]] = defaultdict(list)
    for row in facts.writes:
        groups[(row.path, row.resource)].append(row)
    found = []
    for (path, resource), rows in sorted(groups.items()):
        found.extend(_write_order(path, resource, rows, tolerance))
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
                        (row.committed or 0) - limit < tolerance * 1e6,
                    )
                )
    return found
