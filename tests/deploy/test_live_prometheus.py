"""The chart's dashboard and alert rules against a real Prometheus scraping a running
`tenure serve`, driven through acquire, renew, release, claim, complete and verify, a takeover, a
lost lease, stale fence verifications and a missed job window.

The service is driven twice, a few scrapes apart: a labelled counter appears with its first
event, and rate() and increase() count only what happens after a series' first sample, so the
second round is what makes the rates of the dashboard and of the alert rules positive.

What is asserted, through Prometheus's HTTP API:
- every dashboard target (variables at "All", `$__rate_interval` 1m) returns a series with a
  finite value, and every variable's selector returns series;
- every alert rule was evaluated by Prometheus without error (health "ok"), its expression
  evaluates, and every series selector inside it returns data;
- the alerts whose expressions the drive made true (the missed window, the lost leases, the fence
  rejections) are firing when their rule has no `for:`, else at least pending; no other alert
  fires;
- every metric an expression names is in the service's /metrics exposition.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.helm_chart import CHART
from tests.deploy.promql import (
    PROMETHEUS_OWN,
    dashboard_targets,
    exported,
    metric_name,
    selectors,
)
from tests.support import postgres
from tests.support.processes import tenure_service
from tests.support.prometheus import Prometheus, prometheus, prometheus_program

pytestmark = pytest.mark.slow

DASHBOARD = CHART / "files" / "grafana-dashboard.json"
RULES = CHART / "files" / "prometheus-rules.yaml"
TTL = 30
# Per round after the first: at least the rule thresholds (3 lost renewals, 5 fence rejections in
# 15 minutes), one more for increase()'s rounding.
LOST_RENEWALS = 4
STALE_VERIFIES = 6
# Series the drive makes true, and so the alerts whose expressions use them.
DRIVEN = (
    'tenure_job_status{status="missed"}',
    "tenure_lease_renew_refusals_total",
    "tenure_fence_rejections_total",
)


@pytest.fixture(scope="module")
def prometheus_binary() -> None:
    if prometheus_program() is None:
        pytest.skip("the prometheus program is not installed (apt-get install prometheus)")


async def sql(database_url: str, statement: str, *arguments: object) -> None:
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(statement, *arguments)
    finally:
        await connection.close()


class Drive:
    """The service driven as clients would, over HTTP."""

    def __init__(self, http: httpx.Client, database_url: str) -> None:
        self.http = http
        self.database_url = database_url

    def post(self, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
        answer = self.http.post(path, json=body)
        assert answer.status_code == status, (path, answer.text)
        result: dict[str, Any] = answer.json()
        return result

    def acquire(self, lease: str, holder: str, status: int = 200) -> dict[str, Any]:
        return self.post(
            f"/v1/leases/{lease}/acquire", {"holder": holder, "ttl_seconds": TTL}, status
        )

    def release(self, grant: dict[str, Any]) -> None:
        keys = ("holder", "generation", "grant")
        self.post(f"/v1/leases/{grant['name']}/release", {key: grant[key] for key in keys})

    def verify(self, lease: str, generation: int, status: int = 200) -> None:
        self.post("/v1/fences/ledger/verify", {"lease": lease, "generation": generation}, status)

    def register(self, job: str, *, overdue: bool) -> None:
        """A daily job with a 60 s deadline. An overdue one had its occurrence an hour ago and is
        registered as if two days ago (an occurrence before registration is never missed): its
        current window is missed. Another one's next occurrence is half a day away."""
        occurrence = datetime.now(UTC) - timedelta(hours=1 if overdue else -12)
        body = {
            "schedule": f"{occurrence.minute} {occurrence.hour} * * *",
            "timezone": "UTC",
            "deadline_seconds": 60,
        }
        answer = self.http.put(f"/v1/jobs/{job}", json=body)
        assert answer.status_code == 200, answer.text
        if overdue:
            self.sql(
                "UPDATE jobs SET active_since = active_since - interval '2 days' WHERE name = $1",
                job,
            )

    def sql(self, statement: str, *arguments: object) -> None:
        asyncio.run(sql(self.database_url, statement, *arguments))

    def round(self, number: int, *, lost: int, stale: int) -> None:
        """One round: a fenced takeover with lost renewals and stale verifications, then a job
        run (refused acquire, renew, claim, complete, release)."""
        first = self.acquire("sync", "x")
        self.verify("sync", first["generation"])
        self.sql("UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = 'sync'")
        second = self.acquire("sync", "y")
        self.verify("sync", second["generation"])
        renewal = {"holder": "x", "generation": first["generation"], "ttl_seconds": TTL}
        for _ in range(lost):
            self.post("/v1/leases/sync/renew", renewal, 409)
        for _ in range(stale):
            self.verify("sync", first["generation"], 409)
        self.release(second)

        run = self.acquire("report", "a")
        self.acquire("report", "b", 409)
        renewal = {"holder": "a", "generation": run["generation"], "ttl_seconds": TTL}
        run = self.post("/v1/leases/report/renew", renewal)
        holding = {"holder": "a", "lease": "report", "generation": run["generation"]}
        for action in ("claim", "complete"):
            self.post(f"/v1/jobs/report/windows/round-{number}/{action}", holding)
        self.release(run)


def exposition(url: str) -> tuple[set[str], set[str], dict[str, float]]:
    """The family names, the sample names, and each sample name's total of a scrape."""
    families: set[str] = set()
    samples: set[str] = set()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=10).text):
        families.add(family.name)
        for sample in family.samples:
            samples.add(sample.name)
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return families, samples, totals


def caught_up(server: Prometheus, url: str, name: str) -> None:
    """Wait until Prometheus has scraped the service's current total of `name`."""
    total = exposition(url)[2][name]

    def seen() -> bool:
        result = server.query(f"sum({name})")
        return bool(result) and float(result[0]["value"][1]) == total

    server.wait_for(seen)


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text("utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(sample["value"][1])) for sample in result)


@dataclass(frozen=True)
class Live:
    prometheus: Prometheus
    service_url: str


@pytest.fixture(scope="module")
def database(server_url: str, template_database: str) -> Iterator[str]:
    """A database of its own for the module's service (the per-test one is per function)."""
    name = postgres.unique_name("tenure_live")
    url = asyncio.run(postgres.create_database(server_url, name, template=template_database))
    yield url
    asyncio.run(postgres.drop_database(server_url, name))


@pytest.fixture(scope="module")
def live(prometheus_binary: None, database: str) -> Iterator[Live]:
    """The service, scraped by Prometheus with the chart's rules, driven two rounds apart."""
    with (
        tenure_service(
            database_url=database,
            # Quick monitor passes and fresh gauges, so that state shows within seconds.
            TENURE_MONITOR_INTERVAL_SECONDS="0.5",
            TENURE_MONITOR_LEASE_TTL_SECONDS="2",
            TENURE_METRICS_CACHE_SECONDS="0.5",
        ) as service,
        prometheus({"tenure": [f"127.0.0.1:{service.port}"]}, rule_files=[RULES]) as server,
        httpx.Client(base_url=service.url, timeout=10) as http,
    ):
        drive = Drive(http, database)
        drive.register("nightly", overdue=True)
        drive.register("report", overdue=False)
        drive.acquire("pinned", "p")  # held throughout: the held-lease gauges have a sample
        drive.round(1, lost=1, stale=1)
        caught_up(server, service.url, "tenure_lease_releases_total")
        drive.round(2, lost=LOST_RENEWALS, stale=STALE_VERIFIES)
        caught_up(server, service.url, "tenure_lease_releases_total")
        yield Live(server, service.url)


def test_every_dashboard_target_returns_data(live: Live) -> None:
    """Each panel's expression, with the dashboard's variables at "All" and a one-minute rate
    window, returns at least one series with a finite value (the alerts panel once the rules
    have fired); each variable's selector returns series."""
    targets = dashboard_targets(DASHBOARD)

    def empty() -> list[str]:
        return [
            f"{target.panel}: {target.expression} -> {result}"
            for target in targets
            if not finite(result := live.prometheus.query(target.expression))
        ]

    with contextlib.suppress(TimeoutError):
        live.prometheus.wait_for(lambda: not empty())
    assert not empty(), "\n".join(empty())


def test_every_alert_expression_evaluates_on_live_series(live: Live) -> None:
    """Prometheus evaluated every rule of the file without error; each alert's expression
    evaluates, and each series selector in it returns data."""
    rules = alert_rules()

    def evaluated() -> list[dict[str, Any]]:
        alerting = [
            rule
            for group in live.prometheus.rule_groups()
            for rule in group["rules"]
            if rule["type"] == "alerting"
        ]
        # Prometheus says "0001-01-01T00:00:00Z" for a rule not evaluated yet.
        done = all(not rule["lastEvaluation"].startswith("0001") for rule in alerting)
        return alerting if alerting and done else []

    loaded = live.prometheus.wait_for(evaluated)
    assert sorted(rule["name"] for rule in loaded) == sorted(rule["alert"] for rule in rules)
    assert all(rule["health"] == "ok" for rule in loaded), loaded
    empty = []
    for rule in rules:
        live.prometheus.query(rule["expr"])  # raises on an evaluation error
        for selector in selectors(rule["expr"]):
            if not live.prometheus.query(selector):
                empty.append(f"{rule['alert']}: {selector}")
    assert not empty, empty


def test_the_driven_alerts_fire_and_no_other(live: Live) -> None:
    """The missed window's, the lost leases' and the fence rejections' alerts are firing (pending
    at least, for a rule with `for:`); no other alert fires."""
    rules = alert_rules()
    driven = {
        rule["alert"]: rule
        for rule in rules
        if any(selector in rule["expr"] for selector in DRIVEN)
    }
    assert len(driven) >= len(DRIVEN), sorted(driven)

    def states() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for alert in live.prometheus.alerts():
            found.setdefault(alert["labels"]["alertname"], set()).add(alert["state"])
        expected = all(
            ("firing" in found.get(name, set()))
            or ("for" in rule and "pending" in found.get(name, set()))
            for name, rule in driven.items()
        )
        return found if expected else {}

    found = live.prometheus.wait_for(states)
    firing = {name for name, seen in found.items() if "firing" in seen}
    assert firing <= set(driven), found


def test_no_expression_names_a_metric_the_service_does_not_export(live: Live) -> None:
    """Every metric named by a dashboard target or an alert rule is in /metrics (a counter by its
    `_total`, a histogram by `_bucket`/`_count`/`_sum`), apart from Prometheus's own."""
    families, samples, _ = exposition(live.service_url)
    expressions = [target.expression for target in dashboard_targets(DASHBOARD)]
    expressions += [rule["expr"] for rule in alert_rules()]
    names = {
        name
        for expression in expressions
        for selector in selectors(expression)
        if (name := metric_name(selector)) is not None
    }
    assert names, "no metric names found"
    missing = sorted(
        name for name in names - PROMETHEUS_OWN if not exported(name, families, samples)
    )
    assert not missing, missing
