"""The targets of issues 9 and 29, each judged from one run's figures: pass, FAIL, or n/a."""

from __future__ import annotations

from collections.abc import Callable

import sdk_cycles
from results import Results
from workloads import percentile

Judge = Callable[[Results], tuple[str, bool | None]]


def format_rate(value: float) -> str:
    return f"{value:,.0f}"


def format_ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("pass" if ok else "**FAIL**")


def _rate_over(
    r: Results, workload: str, baseline: str, connections: int, bound: float
) -> tuple[str, bool | None]:
    """Tenure's rate over the baseline's at `connections`, judged against `bound`."""
    tenure, other = (
        r.median(workload, "tenure", connections),
        r.median(workload, baseline, connections),
    )
    if not tenure or not other or not other.rate:
        return f"not measured (needs {connections} connections)", None
    ratio = tenure.rate / other.rate
    rates = f"{format_rate(tenure.rate)} vs {format_rate(other.rate)}/s"
    return f"{ratio:.2f}× ({rates} at {connections} conns)", ratio >= bound


def _target_acquire(r: Results) -> tuple[str, bool | None]:
    c = 16 if 16 in r.connections else max(r.connections)
    return _rate_over(r, "acquire", "naive", c, 2)


def _target_cycle(r: Results) -> tuple[str, bool | None]:
    tenure, raw = r.peak("cycle", "tenure"), r.peak("cycle", "raw")
    if not tenure or not raw:
        return "not measured", None
    text = (
        f"{format_rate(tenure.rate)} vs {format_rate(raw.rate)} cycles/s (best of each over conns)"
    )
    return text, tenure.rate >= raw.rate


def _target_batch(r: Results) -> tuple[str, bool | None]:
    if "batch_renew" in r.missing:
        return r.missing["batch_renew"], False
    batch, single = r.peak("batch_renew", "tenure"), r.peak("renew", "tenure")
    if not batch or not single:
        return "not measured", None
    times = batch.rate / single.rate if single.rate else 0.0
    text = f"{format_rate(batch.rate)} leases/s = {times:.1f}× single renews"
    return text, batch.rate >= 50_000 and times >= 10


def _latency_over(baseline: str, bound: float) -> Judge:
    """Tenure's acquire p50 at one connection over the baseline's, at most `bound`."""

    def judge(r: Results) -> tuple[str, bool | None]:
        tenure, other = r.median("acquire", "tenure", 1), r.median("acquire", baseline, 1)
        if not tenure or not other or not other.p50_ms:
            return "not measured (needs 1 connection)", None
        ratio = tenure.p50_ms / other.p50_ms
        text = f"{ratio:.2f}× ({format_ms(tenure.p50_ms)} vs {format_ms(other.p50_ms)} ms)"
        return text, ratio <= bound

    return judge


def _handoff_under(bound_ms: float, *, within: bool = True, across: bool = True) -> Judge:
    """The p99 of the hand-offs within one process and/or across two replicas below `bound_ms`."""

    def judge(r: Results) -> tuple[str, bool | None]:
        judged = [
            (what, latencies)
            for what, latencies, wanted in (
                ("within one process", r.handoff, within),
                ("across two replicas", r.handoff_across, across),
            )
            if wanted and latencies
        ]
        if not judged:
            return "not measured", None
        texts, passed = [], True
        for what, latencies in judged:
            p99 = percentile(sorted(latencies), 0.99) * 1000
            texts.append(f"{what} p99 {format_ms(p99)} ms ({len(latencies)} hand-offs)")
            passed = passed and p99 < bound_ms
        if r.handoff_floor:
            floor = percentile(sorted(r.handoff_floor), 0.99) * 1000
            texts.append(f"the database alone (two commits): p99 {format_ms(floor)} ms")
        return "; ".join(texts), passed

    return judge


def _target_takeover(r: Results) -> tuple[str, bool | None]:
    if not r.takeover:
        return "not measured", None
    worst, bound = max(r.takeover), r.takeover_ttl + 1
    text = f"max {worst:.2f} s of {len(r.takeover)} (bound {bound:g} s)"
    return text, worst <= bound


def _target_idle(r: Results) -> tuple[str, bool | None]:
    """Judged on the cheapest way the service offers (batch renews when it has them)."""
    if not r.idle:
        return "not measured", None
    idle = min(r.idle, key=lambda i: i.service_core_percent if not i.errors else float("inf"))
    projected = idle.service_core_percent * 10_000 / idle.leases
    how = "single renews" if idle.batch == 1 else f"batch renews of {idle.batch}"
    text = f"{idle.service_core_percent:.1f}% of one core with {idle.leases:,} leases ({how})"
    if idle.leases != 10_000:
        text += f" (≈{projected:.1f}% projected to 10,000)"
    return text, projected < 15 and not idle.errors


def _target_hot(r: Results) -> tuple[str, bool | None]:
    tenure, pgbench = r.peak("hot", "tenure"), r.peak("hot", "pgbench")
    if not tenure or not pgbench:
        return "not measured", None
    share = tenure.rate / pgbench.rate * 100
    text = (
        f"{share:.0f}% ({format_rate(tenure.rate)} vs {format_rate(pgbench.rate)}/s, best of each)"
    )
    return text, share >= 80


TARGETS = (
    (
        "acquire req/s, 2 workers, 16 connections",
        "≥ 2× the naive FastAPI endpoint",
        _target_acquire,
    ),
    ("acquire→release cycles/s", "≥ the raw asyncpg cycle from one process", _target_cycle),
    ("batch renew, leases renewed per second", "≥ 50k/s (≥ 10× single renews)", _target_batch),
    ("acquire p50 at 1 connection", "≤ 1.2× the naive endpoint's", _latency_over("naive", 1.2)),
    ("hand-off, release → waiter holds it", "p99 < 20 ms", _handoff_under(20)),
    ("takeover after SIGKILL of a holder", "≤ TTL + 1 s", _target_takeover),
    ("idle: 10,000 held leases renewing every 30 s", "service < 15% of one core", _target_idle),
    ("hot single name", "≥ 80% of pgbench's single-name rate", _target_hot),
    *(
        (measure, target, lambda r, judge=judge: judge(r.sdk))
        for measure, target, judge in sdk_cycles.TARGETS
    ),
)


def _target_batch_verify(r: Results) -> tuple[str, bool | None]:
    tenure, raw = r.peak("batch_verify", "tenure"), r.peak("batch_verify", "raw")
    if not tenure or not raw or not raw.rate:
        return "not measured", None
    ratio = tenure.rate / raw.rate
    text = f"{ratio:.2f}× ({format_rate(tenure.rate)} vs {format_rate(raw.rate)}/s, best of each)"
    return text, ratio >= 1


def _target_cycles_over_raw(r: Results) -> tuple[str, bool | None]:
    judged = [_rate_over(r, "cycle", "raw", c, 1.5) for c in (16, 64)]
    verdicts = [ok for _, ok in judged]
    ok = None if None in verdicts else all(verdicts)
    return "; ".join(text for text, _ in judged), ok


# Issue 29's "remaining gaps" of the service, judged from the same run's figures.
GAP_TARGETS = (
    ("batch verify, verifies per second", "≥ raw asyncpg's rate", _target_batch_verify),
    (
        "acquire req/s at 64 connections",
        "≥ 1.5× pgbench",
        lambda r: _rate_over(r, "acquire", "pgbench", 64, 1.5),
    ),
    (
        "acquire→release cycles/s at 16 and 64",
        "≥ 1.5× raw asyncpg at each",
        _target_cycles_over_raw,
    ),
    (
        "hand-off, release → waiter holds it, within one service process",
        "p99 < 5 ms",
        _handoff_under(5, across=False),
    ),
    (
        "hand-off, release → waiter holds it, across two replicas",
        "p99 < 5 ms",
        _handoff_under(5, within=False),
    ),
    ("acquire p50 at 1 connection", "≤ 2× pgbench's", _latency_over("pgbench", 2)),
)


def targets_table(
    r: Results, targets: tuple[tuple[str, str, Judge], ...] | None = None
) -> list[str]:
    lines = ["| measure | target | measured | verdict |", "|---|---|---|---|"]
    for measure, target, evaluate in TARGETS if targets is None else targets:
        text, ok = evaluate(r)
        lines.append(f"| {measure} | {target} | {text} | {_verdict(ok)} |")
    return lines
