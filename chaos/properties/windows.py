"""Property 6: at most one completion per window, by the holding of its latest claim."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from chaos.history import History, WindowEvent
from chaos.properties import Violation, holders

Holding = tuple[str, int]  # holder, generation


def _completions(
    job: str, window: str, events: list[WindowEvent], holder_of: Mapping[tuple[str, int], str]
) -> list[Violation]:
    """The violations of one window's events (in id order)."""
    found = []
    done = [event for event in events if event.kind == "completed"]
    if len(done) > 1:
        found.append(Violation(6, f"{job}/{window}: completed {len(done)} times"))
    for completion in done:
        claims = [e for e in events if e.kind == "claimed" and e.id < completion.id]
        holding = (completion.holder, completion.generation)
        if not claims or (claims[-1].holder, claims[-1].generation) != holding:
            found.append(
                Violation(
                    6,
                    f"{job}/{window}: completed by {completion.holder} generation "
                    f"{completion.generation}, not the holding of its latest claim",
                )
            )
        granted = holder_of.get((completion.lease, completion.generation))
        if granted is not None and granted != completion.holder:
            found.append(
                Violation(
                    6,
                    f"{job}/{window}: completed by {completion.holder} under a "
                    f"generation granted to {granted}",
                )
            )
    return found


def check_windows(history: History) -> list[Violation]:
    facts, holder_of = history.facts, holders(history)
    groups: dict[tuple[str, str], list[WindowEvent]] = defaultdict(list)
    for event in facts.window_events:
        groups[(event.job, event.window)].append(event)
    found: list[Violation] = []
    completed: dict[tuple[str, str], Holding] = {}
    for (job, window), events in sorted(groups.items()):
        events.sort(key=lambda event: event.id)
        found.extend(_completions(job, window, events, holder_of))
        for event in events:
            if event.kind == "completed":
                completed[(job, window)] = (event.holder, event.generation)
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
    seen: dict[str, set[Holding]] = defaultdict(set)
    for op in history.ops("complete"):
        if op.outcome == "ok" and op.window is not None:
            seen[op.window].add((op.holder, op.generation or 0))
    return [
        Violation(6, f"{window}: completion acknowledged to {len(holdings)} holdings")
        for window, holdings in sorted(seen.items())
        if len(holdings) > 1
    ]
