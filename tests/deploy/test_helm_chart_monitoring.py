"""The chart's opt-in Prometheus alerts and Grafana dashboard: each renders only when enabled,
lints clean and validates strictly (the PrometheusRule custom resource by its structure and by
promtool), the rules are exactly files/prometheus-rules.yaml, and the dashboard ConfigMap carries
the sidecar's label and files/grafana-dashboard.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest

from tests.deploy.helm_chart import (
    CHART,
    KUBERNETES_VERSIONS,
    LINT_KUBE_VERSION,
    REQUIRED,
    Manifest,
    Values,
    check_service_monitor,
    merged,
    notes,
    render,
)
from tests.deploy.prometheus_rules import check_rule_groups, rule_groups

DASHBOARD = CHART / "files" / "grafana-dashboard.json"


BASE_URL = "https://git.example/platform/tenure/blob/main"


MONITORING: dict[str, Values] = {
    "prometheus-rule": {"prometheusRule": {"enabled": True, "labels": {"release": "prom"}}},
    "grafana-dashboard": {"grafanaDashboard": {"enabled": True}},
    "both": {
        "serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "tenure-scrape"}},
        "prometheusRule": {
            "enabled": True,
            "labels": {"release": "prom"},
            "additionalRuleLabels": {"team": "platform", "severity": "ignored"},
            "runbookBaseUrl": BASE_URL + "/",
        },
        "grafanaDashboard": {
            "enabled": True,
            "namespace": "monitoring",
            "sidecarLabel": "example.com/dashboard",
            "sidecarLabelValue": "tenure",
            "labels": {"team": "platform"},
            "folder": "Coordination",
        },
    },
}


def _of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def _dashboards(manifests: list[Manifest]) -> list[Manifest]:
    return [m for m in _of_kind(manifests, "ConfigMap") if "tenure.json" in m.get("data", {})]


def check_prometheus_rule(manifest: Manifest) -> None:
    """PrometheusRule is a custom resource, absent from the Kubernetes schemas: check the fields
    the Prometheus operator reads (promtool checks the groups themselves)."""
    assert manifest["apiVersion"] == "monitoring.coreos.com/v1"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    assert set(manifest["spec"]) == {"groups"}
    for group in manifest["spec"]["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit", "partial_response_strategy"}
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations"}


@pytest.mark.parametrize("combination", sorted(MONITORING))
def test_chart_lints_clean(combination: str) -> None:
    """`helm lint --strict` finds nothing above info level with the alerts and dashboard on."""
    values = merged(REQUIRED, MONITORING[combination])
    report = helm.lint(CHART, values, strict=True, kube_version=LINT_KUBE_VERSION)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("combination", sorted(MONITORING))
def test_every_manifest_validates(chart: helm.Chart, combination: str, tmp_path: Path) -> None:
    """Each rendered object is valid (no unknown fields) for the oldest and newest supported
    Kubernetes; the custom resources are checked structurally, the rules by promtool."""
    manifests = render(chart, MONITORING[combination])
    for manifest in manifests:
        if manifest["kind"] == "PrometheusRule":
            check_prometheus_rule(manifest)
        elif manifest["kind"] == "ServiceMonitor":
            check_service_monitor(manifest)
        else:
            for version in KUBERNETES_VERSIONS:
                kubernetes_validate.validate(manifest, version, strict=True)
    for rule in _of_kind(manifests, "PrometheusRule"):  # last: skipped without promtool
        check_rule_groups(rule["spec"]["groups"], tmp_path)


@pytest.mark.parametrize("combination", sorted(MONITORING))
def test_names_fit_kubernetes_limits(chart: helm.Chart, combination: str) -> None:
    """The new objects' names are DNS labels of at most 63 characters, even for a long release."""
    long_release = "a-release-name-that-is-fifty-three-characters-long-xy"
    manifests = render(chart, MONITORING[combination], name=long_release)
    for manifest in _of_kind(manifests, "PrometheusRule") + _dashboards(manifests):
        name = manifest["metadata"]["name"]
        assert len(name) <= 63
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name


@pytest.mark.parametrize(
    ("values", "rules", "dashboards"),
    [
        ({}, 0, 0),
        (MONITORING["prometheus-rule"], 1, 0),
        (MONITORING["grafana-dashboard"], 0, 1),
        (MONITORING["both"], 1, 1),
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
    (rule,) = _of_kind(render(chart, MONITORING["both"]), "PrometheusRule")
    rendered, original = _alerts(rule["spec"]["groups"]), _alerts(rule_groups())
    assert len(rendered) == len(original)
    for got, want in zip(rendered, original, strict=True):
        runbook = want["annotations"]["runbook_url"]
        assert got["annotations"] == want["annotations"] | {"runbook_url": f"{BASE_URL}/{runbook}"}
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
    (config_map,) = _dashboards(render(chart, MONITORING["both"]))
    metadata = config_map["metadata"]
    assert metadata["namespace"] == "monitoring"
    assert metadata["labels"]["example.com/dashboard"] == "tenure"
    assert metadata["labels"]["team"] == "platform"
    assert "grafana_dashboard" not in metadata["labels"]
    assert metadata["annotations"] == {"grafana_folder": "Coordination"}


def test_notes_name_the_alerts_and_the_dashboard(chart: helm.Chart) -> None:
    """NOTES.txt says where the alerts' runbooks are and which ConfigMap holds the dashboard."""
    text = notes(chart, MONITORING["both"])
    assert "docs/operations.md" in text
    assert "Runbook: alerts" in text
    assert "tenure-dashboard" in text
    assert "Runbook: alerts" not in notes(chart, {})


BAD_VALUES: dict[str, tuple[Values, str]] = {
    "rule switch not a boolean": (
        {"prometheusRule": {"enabled": "yes"}},
        "/prometheusRule/enabled",
    ),
    "unknown rule key": ({"prometheusRule": {"enabled": True, "ruleLabels": {}}}, "ruleLabels"),
    "runbook base without scheme": (
        {"prometheusRule": {"runbookBaseUrl": "git.example/tenure"}},
        "/prometheusRule/runbookBaseUrl",
    ),
    "rule label not a string": (
        {"prometheusRule": {"additionalRuleLabels": {"tier": 1}}},
        "/prometheusRule/additionalRuleLabels",
    ),
    "numeric sidecar label value": (
        {"grafanaDashboard": {"sidecarLabelValue": 1}},
        "/grafanaDashboard/sidecarLabelValue",
    ),
    "bad sidecar label key": (
        {"grafanaDashboard": {"sidecarLabel": "grafana dashboard"}},
        "/grafanaDashboard/sidecarLabel",
    ),
    "bad namespace": (
        {"grafanaDashboard": {"namespace": "Monitoring"}},
        "/grafanaDashboard/namespace",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_fail_the_schema(chart: helm.Chart, case: str) -> None:
    """values.schema.json refuses the value, and the error names the offending key."""
    values, fragment = BAD_VALUES[case]
    with pytest.raises(helm.HelmValuesError) as failure:
        render(chart, values)
    assert fragment in str(failure.value)
