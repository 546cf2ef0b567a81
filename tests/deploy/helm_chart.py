"""The Helm chart as its tests see it: rendered by Helm's own engine (helm-python-sdk binds
Helm's Go SDK; no helm binary, no cluster) for the values every release sets plus the
combinations under test, and what the tests read from the manifests."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tenure_server.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


CHART = ROOT / "helm" / "tenure"


RELEASE = "tenure"


NAMESPACE = "coordination"


# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.25.0", kubernetes_validate.latest_version())


LINT_KUBE_VERSION = "v1.30.0"


Manifest = dict[str, Any]


Values = dict[str, Any]


# Settings only the listening service needs: the migration Job binds to loopback instead, so it
# needs neither the tokens nor the allowance to run without them.
SERVER_ONLY = {"TENURE_HOST", "TENURE_TOKENS_FILE", "TENURE_ALLOW_UNAUTHENTICATED_REMOTE"}


AUTH_REQUIRED = "authentication is not configured"


# The two values every release must set: the database URL's Secret, and authentication (here the
# tokens file; "unauthenticated" below is the explicit alternative).
REQUIRED: Values = {
    "database": {"existingSecret": "tenure-db"},
    "auth": {"tokens": {"enabled": True, "existingSecret": "tenure-tokens"}},
}


UNAUTHENTICATED: Values = {"auth": {"tokens": {"enabled": False}, "allowUnauthenticated": True}}


RUNBOOK_BASE_URL = "https://git.example/platform/tenure/blob/main"

COMBINATIONS: dict[str, Values] = {
    "defaults": {},
    "autoscaling": {"autoscaling": {"enabled": True, "targetMemoryUtilizationPercentage": 80}},
    "service-monitor": {
        **UNAUTHENTICATED,
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
    },
    "service-monitor-auth": {
        "serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "tenure-scrape"}}
    },
    "network-policy": {
        "networkPolicy": {
            "enabled": True,
            "ingressFrom": [{"namespaceSelector": {"matchLabels": {"team": "jobs"}}}],
            "databaseTo": [{"ipBlock": {"cidr": "10.20.0.0/16"}}],
        }
    },
    "unauthenticated": UNAUTHENTICATED,
    "migration-role": {"migration": {"database": {"existingSecret": "tenure-db-owner"}}},
    "no-migration-job": {"migration": {"enabled": False}},
    "single-replica": {"replicaCount": 1},
    "pinned-digest": {
        "image": {"repository": "registry.example/tenure", "digest": "sha256:" + "a" * 64}
    },
    "prometheus-rule": {"prometheusRule": {"enabled": True, "labels": {"release": "prom"}}},
    "grafana-dashboard": {"grafanaDashboard": {"enabled": True}},
    "monitoring-options": {
        "serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "tenure-scrape"}},
        "prometheusRule": {
            "enabled": True,
            "labels": {"release": "prom"},
            "additionalRuleLabels": {"team": "platform", "severity": "ignored"},
            "runbookBaseUrl": RUNBOOK_BASE_URL + "/",
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
    "everything": {
        "autoscaling": {"enabled": True},
        "serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "tenure-scrape"}},
        "prometheusRule": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
        "networkPolicy": {"enabled": True},
        "auth": {"tokens": {"enabled": True, "existingSecret": "tenure-tokens"}},
        "extraEnv": [{"name": "TZ", "value": "UTC"}],
        "imagePullSecrets": [{"name": "registry"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "jobs", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "tenure"}},
            }
        ],
        "podDisruptionBudget": {"minAvailable": "50%"},
        "config": {"statementTimeoutMs": 1000000, "logLevel": "debug"},
    },
}


def merged(*layers: Values) -> Values:
    """Layers merged like `helm -f a -f b`: maps merge, everything else is replaced."""
    out: Values = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = copy.deepcopy(value)
    return out


def render(chart: helm.Chart, *layers: Values, name: str = RELEASE) -> list[Manifest]:
    """The release's manifests (hooks included, NOTES.txt left out) for these values."""
    files = chart.render(merged(REQUIRED, *layers), name=name, namespace=NAMESPACE, is_install=True)
    manifests: list[Manifest] = []
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def only(manifests: list[Manifest], kind: str) -> Manifest:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def kinds(manifests: list[Manifest]) -> set[str]:
    return {m["kind"] for m in manifests}


def container(pod_owner: Manifest) -> Manifest:
    (first,) = pod_owner["spec"]["template"]["spec"]["containers"]
    result: Manifest = first
    return result


def env_values(owner: Manifest) -> dict[str, Any]:
    """Container env as name → value, or → valueFrom for references."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(owner)["env"]}


def check_service_monitor(manifest: Manifest) -> None:
    """ServiceMonitor is a custom resource, absent from the Kubernetes schemas: check the fields
    the Prometheus operator reads."""
    assert manifest["apiVersion"] == "monitoring.coreos.com/v1"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    spec = manifest["spec"]
    assert set(spec) <= {"selector", "namespaceSelector", "endpoints", "jobLabel"}
    assert spec["selector"]["matchLabels"]
    for endpoint in spec["endpoints"]:
        assert set(endpoint) <= {"port", "path", "interval", "scrapeTimeout", "authorization"}
        assert endpoint["path"].startswith("/")
        for duration in (endpoint["interval"], endpoint["scrapeTimeout"]):
            assert re.fullmatch(r"([0-9]+(ms|s|m|h))+", duration)
        if "authorization" in endpoint:
            assert endpoint["authorization"]["type"] == "Bearer"
            assert set(endpoint["authorization"]["credentials"]) == {"name", "key"}


def check_prometheus_rule(manifest: Manifest) -> None:
    """PrometheusRule is a custom resource too: the fields the Prometheus operator reads (promtool
    checks the groups themselves, tests/deploy/test_helm_chart_monitoring.py)."""
    assert manifest["apiVersion"] == "monitoring.coreos.com/v1"
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    assert set(manifest["spec"]) == {"groups"}
    for group in manifest["spec"]["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit", "partial_response_strategy"}
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations"}


# The custom resources the chart renders, absent from the Kubernetes schemas.
CUSTOM_RESOURCES = {
    "ServiceMonitor": check_service_monitor,
    "PrometheusRule": check_prometheus_rule,
}


def settings_of(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The service's Settings for exactly these environment variables."""
    for name in list(Settings.model_fields):
        monkeypatch.delenv(f"TENURE_{name.upper()}", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def notes(chart: helm.Chart, *layers: Values) -> str:
    files = chart.render(merged(REQUIRED, *layers), name=RELEASE, namespace=NAMESPACE)
    (text,) = [text for path, text in files.items() if path.endswith("NOTES.txt")]
    return text
