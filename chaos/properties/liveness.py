"""Property 7: after each fault heals an acquire succeeds within the bound; none stays stuck."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chaos.history import History
from chaos.properties import FINAL_PROCESS, PROBE_PROCESS, Violation, received


@dataclass(frozen=True, slots=True)
class Recovery:
    """How long after a fault healed the first acquire succeeded (None: none did)."""

    fault: str
    healed: float
    seconds: float | None


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
        seconds = None if first is None else received(first) - event.t
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
