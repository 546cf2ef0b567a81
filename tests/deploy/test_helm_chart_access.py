"""Who reaches the Helm chart's release, and how: authentication required unless explicitly
turned off (tokens mounted from a Secret, install notes), the ServiceMonitor's scrape and its
reader token, the network policy."""

from __future__ import annotations

import helm_python as helm
import pytest

from tests.deploy.helm_chart import (
    AUTH_REQUIRED,
    COMBINATIONS,
    NAMESPACE,
    UNAUTHENTICATED,
    container,
    env_values,
    notes,
    only,
    render,
    settings_of,
)


def test_unauthenticated_is_an_explicit_choice(chart: helm.Chart) -> None:
    """auth.allowUnauthenticated sets TENURE_ALLOW_UNAUTHENTICATED_REMOTE=true for the service
    only; with tokens it is never set."""
    manifests = render(chart, UNAUTHENTICATED)
    assert only(manifests, "ConfigMap")["data"]["TENURE_ALLOW_UNAUTHENTICATED_REMOTE"] == "true"
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE" not in env_values(only(manifests, "Job"))
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE" not in only(render(chart), "ConfigMap")["data"]


def test_rendering_without_authentication_fails(chart: helm.Chart) -> None:
    """Secure by default: neither tokens nor the explicit allowance fails the render, saying
    what to set (the service would refuse to start on 0.0.0.0 anyway)."""
    with pytest.raises(helm.HelmRenderError, match=AUTH_REQUIRED) as failure:
        render(chart, {"auth": {"tokens": {"enabled": False}}})
    for value in ("auth.tokens.enabled", "auth.tokens.existingSecret", "auth.allowUnauthenticated"):
        assert value in str(failure.value)


def test_tokens_secret_is_mounted_as_the_tokens_file(chart: helm.Chart) -> None:
    """auth.tokens mounts the existing Secret read-only and points TENURE_TOKENS_FILE at the file;
    never given to the migration Job, and absent when authentication is off."""
    unauthenticated = render(chart, UNAUTHENTICATED)
    assert "TENURE_TOKENS_FILE" not in only(unauthenticated, "ConfigMap")["data"]
    assert not [
        v
        for v in only(unauthenticated, "Deployment")["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    ]
    manifests = render(chart)
    deployment = only(manifests, "Deployment")
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == "tenure-tokens"
    (mount,) = [m for m in container(deployment)["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"] is True
    assert "subPath" not in mount, "a subPath mount would not see a rotated Secret"
    path = only(manifests, "ConfigMap")["data"]["TENURE_TOKENS_FILE"]
    assert path == f"{mount['mountPath']}/tokens"
    assert "TENURE_TOKENS_FILE" not in env_values(only(manifests, "Job"))


@pytest.mark.parametrize("combination", ["defaults", "everything", "unauthenticated"])
def test_the_migration_job_starts_whatever_the_authentication(
    chart: helm.Chart, combination: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Job's settings pass the service's binding rule: `tenure migrate` never listens, so
    it runs on loopback and needs neither the tokens nor the allowance."""
    job = only(render(chart, COMBINATIONS[combination]), "Job")
    env = {name: value for name, value in env_values(job).items() if isinstance(value, str)}
    settings = settings_of(env | {"TENURE_DATABASE_URL": "postgresql://m@db/tenure"}, monkeypatch)
    assert settings.host == "127.0.0.1"
    assert not settings.auth_configured
    assert not settings.allow_unauthenticated_remote


def test_notes_say_how_authentication_is_set_up(chart: helm.Chart) -> None:
    """The install notes tell how to add a principal when tokens are on, and warn loudly when
    authentication is off."""
    on = notes(chart)
    assert "tenure token new" in on
    assert "tenure-tokens" in on
    assert "WARNING" not in on
    assert "WARNING: authentication is OFF" in notes(chart, UNAUTHENTICATED)


def test_service_monitor_scrapes_metrics_of_the_service(chart: helm.Chart) -> None:
    """The ServiceMonitor selects the Service by its labels and scrapes /metrics on `http`."""
    manifests = render(chart, COMBINATIONS["service-monitor"])
    monitor = only(manifests, "ServiceMonitor")
    service = only(manifests, "Service")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "http"
    assert endpoint["path"] == "/metrics"
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert "authorization" not in endpoint


def test_service_monitor_can_send_a_reader_token(chart: helm.Chart) -> None:
    """With auth on, the scrape sends a bearer token read from an existing Secret."""
    monitor = only(render(chart, COMBINATIONS["service-monitor-auth"]), "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "tenure-scrape", "key": "token"},
    }


def test_scraping_a_protected_service_needs_a_reader_token(chart: helm.Chart) -> None:
    """With tokens on, a ServiceMonitor without a bearer token Secret fails the render: every
    scrape of /metrics would be a 401."""
    with pytest.raises(helm.HelmRenderError, match=r"bearerTokenSecret\.name is required"):
        render(chart, {"serviceMonitor": {"enabled": True}})


def test_network_policy_allows_the_api_dns_and_database_only(chart: helm.Chart) -> None:
    """The policy covers service and migration pods: ingress to `http` from the given peers;
    egress to DNS and the database port only."""
    manifests = render(chart, COMBINATIONS["network-policy"])
    policy = only(manifests, "NetworkPolicy")
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for kind in ("Deployment", "Job"):
        labels = only(manifests, kind)["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert ingress["from"] == [{"namespaceSelector": {"matchLabels": {"team": "jobs"}}}]
    egress_ports = {
        (p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]
    }
    assert egress_ports == {(53, "UDP"), (53, "TCP"), (5432, "TCP")}
    (database,) = [r for r in policy["spec"]["egress"] if r["ports"][0]["port"] == 5432]
    assert database["to"] == [{"ipBlock": {"cidr": "10.20.0.0/16"}}]
