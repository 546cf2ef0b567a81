"""The markdown of a run: the issue's targets with pass/fail, throughput and latency per workload
and connection count with the ratios to each baseline, CPU per operation, the latency scenarios,
the profile breakdown; and its place in bench/README.md between two markers."""

from __future__ import annotations

import statistics
from pathlib import Path

import grown
import sdk_cycles
from results import BASELINES, LABELS, SYSTEMS, WORKLOADS, Results, connections_of
from targets import GAP_TARGETS, format_ms, format_rate, targets_table
from workloads import Measurement, percentile

START, END = "<!-- results:start -->", "<!-- results:end -->"
CAVEATS = (
    "Client and servers share the machine's cores (wrk or the load client, uvicorn workers, "
    "PostgreSQL, and whatever else runs): absolute numbers vary between runs (by how much: "
    '"What runs" above), so compare only within one run; the ratios are the result. Each '
    "figure is the median of the runs; latency is per operation (a cycle is one operation), "
    "measured by the client."
)


def _cell(m: Measurement | None, failure: str | None) -> str:
    if failure:
        return "error"
    if m is None:
        return "—"
    errors = f" ⚠ {m.errors} errors" if m.errors else ""
    return f"{format_rate(m.rate)}/s ({format_ms(m.p50_ms)} / {format_ms(m.p99_ms)} ms){errors}"


def _ratio(a: Measurement | None, b: Measurement | None) -> str:
    if a is None or b is None or b.rate == 0:
        return "—"
    return f"{a.rate / b.rate:.2f}×"


def throughput_table(r: Results) -> list[str]:
    lines = [
        "| workload | conns | Tenure | naive FastAPI | raw asyncpg | pgbench "
        "| Tenure ÷ naive | Tenure ÷ raw | Tenure ÷ pgbench |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for workload, (description, systems) in WORKLOADS.items():
        if not r.measured(workload):
            continue
        if workload in r.missing:
            lines.append(f"| {description} | all | {r.missing[workload]} |  |  |  |  |  |  |")
            continue
        for c in connections_of(workload, r.connections):
            m = {s: r.median(workload, s, c) if s in systems else None for s in SYSTEMS}
            cells = [_cell(m[s], r.failures.get((workload, s, c))) for s in SYSTEMS]
            ratios = [_ratio(m["tenure"], m[b]) for b in BASELINES]
            lines.append(f"| {description} | {c} | " + " | ".join(cells + ratios) + " |")
    return lines


def cpu_table(r: Results) -> list[str]:
    """CPU milliseconds per operation, at the largest connection count of 16 or fewer."""
    c = max((n for n in r.connections if n <= 16), default=r.connections[-1])
    lines = [
        f"CPU per operation at {c} connections (ms; app = the service's processes, or the raw "
        "client's; db = all PostgreSQL processes):",
        "",
        "| workload | Tenure app | Tenure db | naive app | naive db | raw client | raw db "
        "| pgbench db |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]

    def per_op(m: Measurement | None, seconds: float | None) -> str:
        return f"{seconds / m.ops * 1000:.3f}" if m and m.ops and seconds else "—"

    for workload, (description, systems) in WORKLOADS.items():
        if workload in r.missing or not r.measured(workload):
            continue
        row = []
        for system in SYSTEMS:
            m = r.median(workload, system, c) if system in systems else None
            if system != "pgbench":
                row.append(per_op(m, m.app_cpu_seconds if m else None))
            row.append(per_op(m, m.db_cpu_seconds if m else None))
        lines.append(f"| {description} | " + " | ".join(row) + " |")
    return lines


def _latencies(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    return (
        f"{len(ordered)} rounds: median {format_ms(statistics.median(ordered) * 1000)} ms, "
        f"p99 {format_ms(percentile(ordered, 0.99) * 1000)} ms, "
        f"max {format_ms(ordered[-1] * 1000)} ms"
    )


def scenarios(r: Results) -> list[str]:
    lines = []
    if r.handoff:
        lines.append(
            "- Hand-off (release → the parked waiter holds it) within one service process "
            f"(`tenure serve --workers 1`), {_latencies(r.handoff)}."
        )
    if r.handoff_across:
        lines.append(
            "- The same hand-off across two replicas (a second `tenure serve --workers 1` on the "
            f"same database; the waiter woken by NOTIFY), {_latencies(r.handoff_across)}."
        )
    if r.handoff_floor:
        lines.append(
            "- The same hand-off by the database alone (the service's release and acquire "
            "statements over an asyncpg pool, the waiter woken by LISTEN, no HTTP: two commits "
            f"in sequence, the floor of a hand-off by release and acquire), "
            f"{_latencies(r.handoff_floor)}."
        )
    if r.takeover:
        each = ", ".join(f"{t:.2f}" for t in r.takeover)
        lines.append(
            f"- Takeover after SIGKILL of a holder (TTL {r.takeover_ttl:g} s, renewing every "
            f"TTL/3), seconds from the kill to the waiter holding it: {each}."
        )
    for i in r.idle:
        db = f"{i.database_core_percent:.1f}%" if i.database_core_percent is not None else "n/a"
        how = "one renew request each" if i.batch == 1 else f"batch renews of {i.batch}"
        lines.append(
            f"- Idle cost, {i.leases:,} held leases each renewed every 30 s by {how} "
            f"({i.renews_per_second:,.0f} leases renewed/s over {i.seconds:g} s, {i.errors} "
            f"failed requests): service {i.service_core_percent:.1f}% of one core, "
            f"PostgreSQL {db}."
        )
    if r.floor_core_percent is not None:
        lines.append(f"- The service with no load at all: {r.floor_core_percent:.1f}% of one core.")
    return lines


CHAIN_SHARE = 0.30
# Frames under which every sample of a worker runs: not worth a row of the inclusive table.
BOOTSTRAP: tuple[str, ...] = (
    "<module>",
    "multiprocessing/",
    "uvicorn/_subprocess",
    "uvicorn/server.py",
    "uvicorn/_compat",
    "uvicorn/supervisors",
    "Runner.run",
    "threading.py",
)


def profile_section(r: Results) -> list[str]:
    if not r.profiles:
        return []
    by_system = {p.system: p for p in r.profiles}
    header = "| part of the request path | " + " | ".join(
        f"{LABELS[p.system]} % | {LABELS[p.system]} ms/request" for p in r.profiles
    )
    lines = [
        header + " |",
        "|---|" + "--:|--:|" * len(r.profiles),
    ]
    names = list(dict.fromkeys(n for p in r.profiles for n, _ in p.categories.most_common()))
    for name in names:
        row = []
        for p in r.profiles:
            share = p.categories[name] / p.samples if p.samples else 0.0
            row += [f"{share * 100:.1f}", f"{share * p.cpu_ms_per_request:.3f}"]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    totals = [f"100 | {p.cpu_ms_per_request:.3f}" for p in r.profiles]
    lines.append(
        "| **all (CPU of the service's processes per request)** | " + " | ".join(totals) + " |"
    )
    for p in r.profiles:
        lines.append("")
        lines.append(
            f"{LABELS[p.system]}: {p.samples:,} samples of its workers at {SAMPLE_NOTE}, "
            f"{format_rate(p.requests_per_second)} req/s meanwhile."
        )
    tenure = by_system.get("tenure")
    if tenure and tenure.samples:
        lines += [
            "",
            "Tenure, inclusive share of the workers' samples by function, top 25 (the frames every "
            f"request passes through, the ASGI middleware and routing chain at {CHAIN_SHARE:.0%} "
            "and more, left out):",
            "",
            "| function (file) | % |",
            "|---|--:|",
        ]
        frames = [
            (frame, count)
            for frame, count in tenure.inclusive.most_common()
            if count < CHAIN_SHARE * tenure.samples
            and not any(marker in frame for marker in BOOTSTRAP)
        ]
        for frame, count in frames[:25]:
            lines.append(f"| `{frame}` | {count / tenure.samples * 100:.1f} |")
    return lines


SAMPLE_NOTE = "100 Hz under wrk acquire load at 16 connections"


def render(r: Results) -> str:
    minutes = r.elapsed_seconds / 60
    parts = [
        f"Run {r.date}, commit `{r.commit}`, {minutes:.1f} minutes: `{r.command}`",
        "",
        *(f"- {line}" for line in r.machine),
        f"- {r.runs} run(s) of {r.seconds:g} s per figure, connections "
        + ", ".join(str(c) for c in r.connections)
        + ".",
        "",
        f"> {CAVEATS}",
        "",
        "### Targets (issue 9)",
        "",
        *targets_table(r),
        "",
        "### Targets (issue 29: the service's remaining gaps)",
        "",
        *targets_table(r, GAP_TARGETS),
        "",
        "### Throughput and latency",
        "",
        "Each cell: operations/s (p50 / p99 latency). Ratios: Tenure's ops/s over the baseline's.",
        "",
        *throughput_table(r),
        "",
        *cpu_table(r),
        "",
        "### Hand-off, takeover, idle",
        "",
        *scenarios(r),
    ]
    if r.grown:
        parts += ["", "### Grown database (issue 29)", "", *grown.render(r.grown)]
    if r.sdk:
        parts += ["", "### The Python SDK from one process, and redis.asyncio", ""]
        parts += sdk_cycles.table(r.sdk)
    if r.profiles:
        parts += ["", "### Profile of the acquire path", "", *profile_section(r)]
    if r.failures:
        parts += ["", "### Errors", ""]
        parts += [f"- {w} / {s} / {c}: {e}" for (w, s, c), e in r.failures.items()]
    return "\n".join(parts) + "\n"


def write_readme(readme: Path, section: str) -> None:
    """Put `section` between the markers of the README (appended under a heading if absent)."""
    text = readme.read_text() if readme.exists() else "# Benchmarks\n"
    block = f"{START}\n{section}{END}"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        text = before + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n## Latest results\n\n{block}\n"
    readme.write_text(text)
