"""The chart's opt-in Prometheus alerts and Grafana dashboard: each renders only when enabled,
the rendered rules pass promtool and are exactly files/prometheus-rules.yaml, and the dashboard
ConfigMap carries the sidecar's label and files/grafana-dashboard.json. (Lint, strict schema
validation and name lengths, with each value on and off: tests/deploy/test_helm_chart.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest

from tests.deploy.helm_chart import (
    CHART,
    COMBINATIONS,
    RUNBOOK_BASE_URL,
    Manifest,
    Values,
    notes,
    render,
)
from tests.deploy.prometheus_rules import check_rule_groups, rule_groups

DASHBOARD = CHART / "files" / "grafana-dashboard.json"


MONITORING = {
    name: COMBINATIONS[name]
    for name in ("prometheus-rule", "grafana-dashboard", "monitoring-options")
}


def _of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def _dashboards(manifests: list[Manifest]) -> list[Manifest]:
    return [m for m in _of_kind(manifests, "ConfigMap") if "tenure.json" in m.get("data", {})]


def test_rendered_rule_groups_pass_promtool(chart: helm.Chart, tmp_path: Path) -> None:
    """The groups as the chart renders them (runbook prefix and extra labels applied) are valid
    rules for promtool. (Lint, schemas and name lengths: tests/deploy/test_helm_chart.py, whose
    combinations include these.)"""
    (rule,) = _of_kind(render(chart, MONITORING["monitoring-options"]), "PrometheusRule")
    check_rule_groups(rule["spec"]["groups"], tmp_path)


@pytest.mark.parametrize(
    ("values", "rules", "dashboards"),
    [
        ({}, 0, 0),
        (MONITORING["prometheus-rule"], 1, 0),
        (MONITORING["grafana-dashboard"], 0, 1),
        (MONITORING["monitoring-options"], 1, 1),
    ],
)
def test_each_is_rendered_only_when_enabled(
    chart: helm.Chart, values: Values, rules: int, dashboards: int
) -> None:
    """Both are off by default, and each value turns on its own object only."""
    manifests = render(chart, values)
    assert len(_of_kind(manifests, "PrometheusRule")) == rules
    assert len(_dashboards(manifests)) == dashboards


def test_rule_groups_are_the_rule_file(chart: helm.Chart) -> None:
    """The PrometheusRule's groups equal files/prometheus-rules.yaml, annotation templates
    ({{ $labels.… }}) included, untouched by Helm."""
    (rule,) = _of_kind(render(chart, MONITORING["prometheus-rule"]), "PrometheusRule")
    assert rule["spec"]["groups"] == rule_groups()
    assert (
        "{{ $labels.exported_job }}"
        in rule["spec"]["groups"][0]["rules"][0]["annotations"]["summary"]
    )
    assert rule["metadata"]["labels"]["release"] == "prom"


def _alerts(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [rule for group in groups for rule in group["rules"]]


def test_runbook_base_url_and_extra_rule_labels(chart: helm.Chart) -> None:
    """runbookBaseUrl goes before every runbook_url; additionalRuleLabels join each alert's own
    labels, which win (severity); nothing else changes."""
    (rule,) = _of_kind(render(chart, MONITORING["monitoring-options"]), "PrometheusRule")
    rendered, original = _alerts(rule["spec"]["groups"]), _alerts(rule_groups())
    assert len(rendered) == len(original)
    for got, want in zip(rendered, original, strict=True):
        runbook = want["annotations"]["runbook_url"]
        assert got["annotations"] == want["annotations"] | {
            "runbook_url": f"{RUNBOOK_BASE_URL}/{runbook}"
        }
        assert got["labels"] == {"team": "platform", **want["labels"]}
        assert _without(got, "labels", "annotations") == _without(want, "labels", "annotations")


def _without(rule: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in rule.items() if key not in keys}


def test_dashboard_config_map_defaults(chart: helm.Chart) -> None:
    """The default sidecar label `grafana_dashboard: "1"`, no folder annotation, the release's
    namespace, and the dashboard JSON as the file holds it."""
    (config_map,) = _dashboards(render(chart, MONITORING["grafana-dashboard"]))
    metadata = config_map["metadata"]
    assert metadata["labels"]["grafana_dashboard"] == "1"
    assert "annotations" not in metadata
    assert "namespace" not in metadata
    assert config_map["data"]["tenure.json"] == DASHBOARD.read_text("utf-8").rstrip("\n")
    assert json.loads(config_map["data"]["tenure.json"])["panels"]


def test_dashboard_config_map_options(chart: helm.Chart) -> None:
    """Label key and value, extra labels, folder annotation and namespace follow the values."""
    (config_map,) = _dashboards(render(chart, MONITORING["monitoring-options"]))
    metadata = config_map["metadata"]
    assert metadata["namespace"] == "monitoring"
    assert metadata["labels"]["example.com/dashboard"] == "tenure"
    assert metadata["labels"]["team"] == "platform"
    assert "grafana_dashboard" not in metadata["labels"]
    assert metadata["annotations"] == {"grafana_folder": "Coordination"}


def test_notes_name_the_alerts_and_the_dashboard(chart: helm.Chart) -> None:
    """NOTES.txt says where the alerts' runbooks are and which ConfigMap holds the dashboard."""
    text = notes(chart, MONITORING["monitoring-options"])
    assert "docs/operations.md" in text
    assert "Runbook: alerts" in text
    assert "tenure-dashboard" in text
    assert "Runbook: alerts" not in notes(chart, {})
