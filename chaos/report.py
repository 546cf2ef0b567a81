"""The summary of a run: figures (a JSON-able dict) and the same as Markdown tables.

Latencies are of answered requests (ok or fail), in milliseconds; waiting acquires are left out
(they wait on purpose). A request is "behind a fence" when a fenced SQL transaction on its lease
was open at some moment between its send and its answer: it may have waited for that lock.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from chaos.checker import PROPERTIES, Verdict
from chaos.history import OUTCOMES, History, Operation
from chaos.properties.clock import ClockSteps

OPERATION_ORDER = ("acquire", "renew", "release", "write_sql", "write_http", "claim", "complete")
TIMED = ("acquire", "renew", "release")
MESSAGES_SHOWN = 10


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _fence_intervals(history: History) -> dict[str, tuple[list[float], list[float]]]:
    """lease -> (starts, running maximum of ends) of its fenced SQL transactions."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for op in history.ops("write_sql"):
        end = op.received if op.received is not None else op.sent + op.hold + 5.0
        spans[op.lease].append((op.sent, end))
    found = {}
    for lease, pairs in spans.items():
        pairs.sort()
        ends, highest = [], -math.inf
        for _, end in pairs:
            highest = max(highest, end)
            ends.append(highest)
        found[lease] = ([start for start, _ in pairs], ends)
    return found


def _behind_fence(op: Operation, fences: Mapping[str, tuple[list[float], list[float]]]) -> bool:
    starts, ends = fences.get(op.lease, ([], []))
    index = bisect.bisect_left(starts, op.received or op.sent) - 1
    return index >= 0 and ends[index] > op.sent


def latencies(history: History) -> dict[str, dict[str, Any]]:
    fences = _fence_intervals(history)
    samples: dict[str, list[float]] = defaultdict(list)
    for op in history.ops(*TIMED):
        if op.received is None or op.outcome == "unknown" or op.wait > 0:
            continue
        milliseconds = (op.received - op.sent) * 1000
        where = "behind fence" if _behind_fence(op, fences) else "free"
        samples[f"{op.op}"].append(milliseconds)
        samples[f"{op.op} ({where})"].append(milliseconds)
    return {
        name: {
            "n": len(values),
            **{f"p{q}": percentile(values, q / 100) for q in (50, 95, 99)},
        }
        for name, values in sorted(samples.items())
    }


def figures(history: History, verdict: Verdict, injected: Mapping[str, int]) -> dict[str, Any]:
    counts: Counter[tuple[str, str]] = Counter((op.op, op.outcome) for op in history.operations)
    events = Counter((event.lease, event.kind) for event in history.facts.lease_events)
    leases = sorted({lease for lease, _ in events})
    refused = Counter(
        f"{op.op}: {op.error}"
        for op in history.ops("write_sql", "write_http", "claim", "complete")
        if op.outcome == "fail"
    )
    return {
        "operations": {
            op: {outcome: counts[(op, outcome)] for outcome in OUTCOMES}
            for op in OPERATION_ORDER
            if any(counts[(op, outcome)] for outcome in OUTCOMES)
        },
        "effects": len(history.effects),
        "latency_ms": latencies(history),
        "leases": {
            lease: {
                "grants": events[(lease, "acquired")] + events[(lease, "taken_over")],
                "takeovers": events[(lease, "taken_over")],
                "releases": events[(lease, "released")],
            }
            for lease in leases
        },
        "takeovers": sum(n for (_, kind), n in events.items() if kind == "taken_over"),
        "refused": dict(sorted(refused.items())),
        "stale_writes_refused": sum(n for key, n in refused.items() if key.startswith("write_")),
        "unknown": {op: counts[(op, "unknown")] for op in OPERATION_ORDER},
        "recoveries": [{"fault": r.fault, "seconds": r.seconds} for r in verdict.recoveries],
        "failovers": [
            dict(event.detail)
            for event in history.faults
            if event.fault == "F10" and event.phase == "heal"
        ],
        "clock": clock_figures(history, verdict),
        "faults_injected": dict(sorted(injected.items())),
        "settings": dict(history.facts.settings),
        "violations": {number: verdict.count(number) for number in PROPERTIES},
        "violation_messages": [
            f"P{v.property}: {v.message}" for v in verdict.violations[:MESSAGES_SHOWN]
        ],
    }


def clock_figures(history: History, verdict: Verdict) -> dict[str, Any] | None:
    """F11's figures: the steps, and what they excused (None: the clock never moved)."""
    steps = ClockSteps.of(history)
    if not steps:
        return None
    moves = [b - a for a, b in itertools.pairwise((0.0, *steps.offsets))]
    overlaps = [v.overlap for v in verdict.excused if v.property == 3]
    return {
        "steps": len(moves),
        "largest_forward": max((move for move in moves if move > 0), default=0.0),
        "largest_backward": steps.largest_fall,
        "overlaps": len(overlaps),
        "longest_overlap": max(overlaps, default=0.0),
        "excused": {n: sum(1 for v in verdict.excused if v.property == n) for n in PROPERTIES},
        "excused_messages": [
            f"P{v.property}: {v.message}" for v in verdict.excused[:MESSAGES_SHOWN]
        ],
    }


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _clock_table(clock: Mapping[str, Any] | None) -> list[str]:
    if clock is None:
        return []
    rows = [
        ["steps", clock["steps"]],
        ["largest step forward (s)", f"{clock['largest_forward']:.3f}"],
        ["largest step back (s)", f"{clock['largest_backward']:.3f}"],
        ["P3 overlaps within a forward step", clock["overlaps"]],
        ["longest overlap (s)", f"{clock['longest_overlap']:.3f}"],
        *[[f"P{n} excused", count] for n, count in clock["excused"].items() if count],
    ]
    lines = _table(["database clock (F11)", "value"], rows)
    return lines + [f"- excused {message}" for message in clock["excused_messages"]] + [""]


def markdown(summary: Mapping[str, Any], title: str) -> str:
    out = [f"### {title}", ""]
    out += _table(
        ["operation", *OUTCOMES],
        [[op, *cells.values()] for op, cells in summary["operations"].items()],
    )
    out += [f"Side effects written: {summary['effects']}", ""]
    out += _table(
        ["latency (ms)", "n", "p50", "p95", "p99"],
        [
            [name, row["n"], _number(row["p50"]), _number(row["p95"]), _number(row["p99"])]
            for name, row in summary["latency_ms"].items()
        ],
    )
    out += _table(
        ["lease", "grants", "takeovers", "releases"],
        [[lease, *row.values()] for lease, row in summary["leases"].items()],
    )
    out += _table(["refused (stale or lost)", "count"], list(summary["refused"].items()))
    out += _table(
        ["unknown outcomes", "count"],
        [[op, n] for op, n in summary["unknown"].items() if n],
    )
    out += _table(
        ["fault healed", "first acquire after (s)"],
        [[r["fault"], _seconds(r["seconds"])] for r in summary["recoveries"]],
    )
    if summary["failovers"]:
        out += _table(
            [
                "failover",
                "stall (s)",
                "acknowledged in the stall",
                "crash → promoted (s)",
                "first acquire after promotion (s)",
                "new standby streaming (s)",
            ],
            [
                [
                    number,
                    f"{row['stall']:.3f}",
                    "yes" if row["acknowledged"] else "no",
                    f"{row['promoted']:.3f}",
                    _seconds(row["first_acquire"]),
                    f"{row['standby']:.3f}",
                ]
                for number, row in enumerate(summary["failovers"], 1)
            ],
        )
    out += _clock_table(summary.get("clock"))
    out += _table(["fault", "injected"], list(summary["faults_injected"].items()))
    out += _table(["database setting", "value"], list(summary["settings"].items()))
    out += _table(
        ["safety property", "violations"],
        [[f"{n}. {PROPERTIES[n]}", count] for n, count in summary["violations"].items()],
    )
    out += [f"- {message}" for message in summary["violation_messages"]]
    return "\n".join(out) + "\n"
