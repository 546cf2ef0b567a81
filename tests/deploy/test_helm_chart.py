"""The Helm chart is valid: linted by Helm's own engine, every manifest validated against the
Kubernetes API schemas (kubernetes-validate, offline), names within Kubernetes' limits,
values.schema.json and the chart's own rules shown to refuse bad values, every value
documented."""

from __future__ import annotations

import re
from collections.abc import Iterator

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.deploy.helm_chart import (
    CHART,
    COMBINATIONS,
    CUSTOM_RESOURCES,
    KUBERNETES_VERSIONS,
    LINT_KUBE_VERSION,
    REQUIRED,
    Values,
    merged,
    render,
)


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_chart_lints_clean(combination: str) -> None:
    """`helm lint --strict` finds nothing above info level for each combination of values."""
    values = merged(REQUIRED, COMBINATIONS[combination])
    report = helm.lint(CHART, values, strict=True, kube_version=LINT_KUBE_VERSION)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_every_manifest_matches_the_kubernetes_schemas(chart: helm.Chart, combination: str) -> None:
    """Each rendered object is valid (no unknown fields) for the oldest and newest supported
    Kubernetes; the custom resources (ServiceMonitor, PrometheusRule) are checked structurally."""
    manifests = render(chart, COMBINATIONS[combination])
    assert manifests
    for manifest in manifests:
        if manifest["kind"] in CUSTOM_RESOURCES:
            CUSTOM_RESOURCES[manifest["kind"]](manifest)
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                where = ".".join(str(part) for part in error.path)
                pytest.fail(f"{manifest['kind']} {where}: {error.message} (Kubernetes {version})")


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_names_fit_kubernetes_limits(chart: helm.Chart, combination: str) -> None:
    """Every object name is a DNS label of at most 63 characters, even for a long release name."""
    long_release = "a-release-name-that-is-fifty-three-characters-long-xy"
    for manifest in render(chart, COMBINATIONS[combination], name=long_release):
        name = manifest["metadata"]["name"]
        assert len(name) <= 63
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name


BAD_VALUES: dict[str, tuple[Values, str]] = {
    "replicaCount zero": ({"replicaCount": 0}, "/replicaCount"),
    "replicaCount string": ({"replicaCount": "two"}, "/replicaCount"),
    "replicaCount fraction": ({"replicaCount": 1.5}, "/replicaCount"),
    "bad database secret name": (
        {"database": {"existingSecret": "Tenure_DB"}},
        "/database/existingSecret",
    ),
    "unknown top-level key": ({"replicas": 3}, "replicas"),
    "unknown nested key": ({"config": {"logLvl": "info"}}, "logLvl"),
    "numeric image tag": ({"image": {"tag": 1.0}}, "/image/tag"),
    "bad pull policy": ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy"),
    "bad log level": ({"config": {"logLevel": "verbose"}}, "/config/logLevel"),
    "privileged port": ({"containerPort": 80}, "/containerPort"),
    "port out of range": ({"service": {"port": 70000}}, "/service/port"),
    "tokens without secret": (
        {"auth": {"tokens": {"enabled": True, "existingSecret": ""}}},
        "/auth/tokens",
    ),
    "allowUnauthenticated not a boolean": (
        {"auth": {"allowUnauthenticated": "yes"}},
        "/auth/allowUnauthenticated",
    ),
    "bad percentage": ({"podDisruptionBudget": {"minAvailable": "half"}}, "minAvailable"),
    "negative timeout": ({"config": {"lockTimeoutMs": -1}}, "/config/lockTimeoutMs"),
    "bad duration": ({"serviceMonitor": {"interval": "30 seconds"}}, "/serviceMonitor/interval"),
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


@pytest.mark.parametrize("secret", ["", None], ids=["empty", "absent"])
def test_a_missing_database_secret_is_named_at_render(
    chart: helm.Chart, secret: str | None
) -> None:
    """Without database.existingSecret the render fails with one message naming that value and
    what to set, not the schema's "minLength: got 0, want 1"."""
    with pytest.raises(helm.HelmRenderError) as failure:
        render(chart, {"database": {"existingSecret": secret}})
    message = str(failure.value)
    assert "database.existingSecret is required" in message
    assert "--set database.existingSecret=" in message
    assert "minLength" not in message


def test_lint_passes_the_bare_chart_and_checks_the_secret_name() -> None:
    """`helm lint` renders leniently (`required` and `fail` only warn there), so the bare chart
    lints clean, as a chart repository's CI lints it; a malformed Secret name is still refused
    by the schema."""
    assert helm.lint(CHART, strict=True)["errors"] == []
    report = helm.lint(CHART, {"database": {"existingSecret": "Tenure_DB"}}, strict=True)
    assert any("/database/existingSecret" in error for error in report["errors"])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config": {"poolMinSize": 20}}, "poolMinSize must not exceed"),
        ({"config": {"minTtlSeconds": 7200}}, "minTtlSeconds must not exceed"),
        ({"config": {"defaultPageSize": 1000}}, "defaultPageSize must not exceed"),
        ({"autoscaling": {"enabled": True, "minReplicas": 9}}, "minReplicas must not exceed"),
        ({"preStopSleepSeconds": 30}, "preStopSleepSeconds must be shorter"),
    ],
)
def test_rules_between_values_fail_the_render(
    chart: helm.Chart, values: Values, message: str
) -> None:
    """Values the service would refuse at start fail the release at render time instead."""
    with pytest.raises(helm.HelmRenderError, match=message):
        render(chart, values)


def _leaves(values: Values, prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and not key.endswith(("Context", "resources")):
            yield from _leaves(value, path + ".")
        else:
            yield path


def test_readme_documents_every_value() -> None:
    """Every value in values.yaml has a row in the chart README's table."""
    values = yaml.safe_load((CHART / "values.yaml").read_text("utf-8"))
    readme = (CHART / "README.md").read_text("utf-8")
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))
    missing = [leaf for leaf in _leaves(values) if leaf not in documented]
    assert missing == []
