"""The Helm chart, rendered and linted by Helm's own engine (helm-python-sdk binds Helm's Go SDK;
no helm binary, no cluster), every manifest validated against the Kubernetes API schemas
(kubernetes-validate, offline), and values.schema.json shown to refuse bad values."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
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
    "everything": {
        "autoscaling": {"enabled": True},
        "serviceMonitor": {"enabled": True, "bearerTokenSecret": {"name": "tenure-scrape"}},
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


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


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
    Kubernetes; the ServiceMonitor custom resource is checked structurally."""
    manifests = render(chart, COMBINATIONS[combination])
    assert manifests
    for manifest in manifests:
        if manifest["apiVersion"].startswith("monitoring.coreos.com/"):
            check_service_monitor(manifest)
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


def test_defaults_render_the_production_shape(chart: helm.Chart) -> None:
    """By default: Deployment, Service, ConfigMap, ServiceAccount, PDB and the migration Job;
    no HPA, ServiceMonitor, NetworkPolicy, and never a Secret."""
    manifests = render(chart)
    assert kinds(manifests) == {
        "Deployment",
        "Service",
        "ConfigMap",
        "ServiceAccount",
        "PodDisruptionBudget",
        "Job",
    }


def test_deployment_is_two_replicas_rolling_without_unavailability(chart: helm.Chart) -> None:
    """Two replicas; a rollout adds a pod before it removes one."""
    deployment = only(render(chart), "Deployment")
    assert deployment["spec"]["replicas"] == 2
    strategy = deployment["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxUnavailable"] == 0


def test_probes_use_readyz_and_healthz(chart: helm.Chart) -> None:
    """Readiness asks /readyz (database and schema); liveness and startup ask /healthz only."""
    main = container(only(render(chart), "Deployment"))
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert main["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert {"name": "http", "containerPort": 8080, "protocol": "TCP"} in main["ports"]


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_are_locked_down(chart: helm.Chart, kind: str) -> None:
    """Service and migration pods run as UID 10001, non-root, read-only root, no privilege
    escalation, all capabilities dropped, RuntimeDefault seccomp, writable /tmp only."""
    owner = only(render(chart), kind)
    pod = owner["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    context = container(owner)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == 10001
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    tmp_mount = {"name": "tmp", "mountPath": "/tmp"}  # noqa: S108 - the pod's mount, not a file
    assert tmp_mount in container(owner)["volumeMounts"]
    (tmp,) = [v for v in pod["volumes"] if v["name"] == "tmp"]
    assert "emptyDir" in tmp


def test_resources_have_requests_and_a_memory_limit(chart: helm.Chart) -> None:
    """The service and migration containers request CPU and memory and cap memory."""
    manifests = render(chart)
    for kind in ("Deployment", "Job"):
        resources = container(only(manifests, kind))["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"])
        assert "memory" in resources["limits"]


def test_database_url_comes_from_the_existing_secret(chart: helm.Chart) -> None:
    """TENURE_DATABASE_URL is a secretKeyRef to database.existingSecret; no URL in any manifest."""
    manifests = render(chart)
    reference = {"secretKeyRef": {"name": "tenure-db", "key": "url"}}
    for kind in ("Deployment", "Job"):
        assert env_values(only(manifests, kind))["TENURE_DATABASE_URL"] == reference
    assert "postgresql://" not in yaml.safe_dump_all(manifests)


def test_replicas_leave_migrations_to_the_hook_job(chart: helm.Chart) -> None:
    """With the migration Job, replicas start with TENURE_MIGRATE_ON_START=false; without it,
    they migrate themselves."""
    with_job = only(render(chart), "Deployment")
    assert env_values(with_job)["TENURE_MIGRATE_ON_START"] == "false"
    manifests = render(chart, COMBINATIONS["no-migration-job"])
    assert "Job" not in kinds(manifests)
    assert env_values(only(manifests, "Deployment"))["TENURE_MIGRATE_ON_START"] == "true"


def test_migration_job_is_a_pre_install_and_pre_upgrade_hook(chart: helm.Chart) -> None:
    """`tenure migrate` runs as a pre-install/pre-upgrade hook, replaced before each attempt and
    deleted after success, with the same settings as the replicas but the listening ones."""
    manifests = render(chart)
    job = only(manifests, "Job")
    annotations = job["metadata"]["annotations"]
    assert set(annotations["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    policy = set(annotations["helm.sh/hook-delete-policy"].split(","))
    assert "before-hook-creation" in policy
    assert container(job)["args"] == ["migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    settings = only(manifests, "ConfigMap")["data"]
    job_env = env_values(job)
    for name, value in settings.items():
        if name in SERVER_ONLY:
            continue
        assert job_env[name] == value, name


def test_migration_job_can_use_its_own_role(chart: helm.Chart) -> None:
    """migration.database.existingSecret gives the Job a separate (schema-owning) role."""
    manifests = render(chart, COMBINATIONS["migration-role"])
    assert env_values(only(manifests, "Job"))["TENURE_DATABASE_URL"] == {
        "secretKeyRef": {"name": "tenure-db-owner", "key": "url"}
    }
    assert env_values(only(manifests, "Deployment"))["TENURE_DATABASE_URL"] == {
        "secretKeyRef": {"name": "tenure-db", "key": "url"}
    }


@pytest.mark.parametrize("combination", ["defaults", "everything", "unauthenticated"])
def test_configmap_settings_are_accepted_by_the_service(
    chart: helm.Chart, combination: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's own Settings accepts every TENURE_* value the chart renders."""
    manifests = render(chart, COMBINATIONS[combination])
    data = only(manifests, "ConfigMap")["data"]
    for name in list(Settings.model_fields):
        monkeypatch.delenv(f"TENURE_{name.upper()}", raising=False)
    for name, value in data.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TENURE_DATABASE_URL", "postgresql://tenure@db/tenure")
    settings = Settings()
    assert settings.host == "0.0.0.0"
    assert settings.workers == 1
    assert str(settings.statement_timeout_ms) in data["TENURE_STATEMENT_TIMEOUT_MS"]


def test_service_selects_server_pods_only(chart: helm.Chart) -> None:
    """Service, PDB and spread constraint select the Deployment's pods and never the migration
    pod (which has no readiness probe and would otherwise receive traffic)."""
    manifests = render(chart)
    pod_labels = only(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    job_labels = only(manifests, "Job")["spec"]["template"]["metadata"]["labels"]
    selectors = [
        only(manifests, "Service")["spec"]["selector"],
        only(manifests, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        only(manifests, "Deployment")["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector.items() <= pod_labels.items()
        assert not selector.items() <= job_labels.items()
    service = only(manifests, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]


def test_pod_disruption_budget_keeps_one_and_needs_two(chart: helm.Chart) -> None:
    """The PDB keeps one pod through drains; with a single replica it is left out (it would
    block every drain)."""
    assert only(render(chart), "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    assert "PodDisruptionBudget" not in kinds(render(chart, COMBINATIONS["single-replica"]))


def test_autoscaling_takes_over_replicas(chart: helm.Chart) -> None:
    """With the HPA on, the Deployment leaves replicas to it and the HPA targets it."""
    manifests = render(chart, COMBINATIONS["autoscaling"])
    deployment = only(manifests, "Deployment")
    assert "replicas" not in deployment["spec"]
    hpa = only(manifests, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] == 2
    metrics = {m["resource"]["name"] for m in hpa["spec"]["metrics"]}
    assert metrics == {"cpu", "memory"}


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


def settings_of(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The service's Settings for exactly these environment variables."""
    for name in list(Settings.model_fields):
        monkeypatch.delenv(f"TENURE_{name.upper()}", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def test_unauthenticated_is_an_explicit_choice(chart: helm.Chart) -> None:
    """auth.allowUnauthenticated sets TENURE_ALLOW_UNAUTHENTICATED_REMOTE=true for the service
    only; with tokens it is never set."""
    manifests = render(chart, UNAUTHENTICATED)
    assert only(manifests, "ConfigMap")["data"]["TENURE_ALLOW_UNAUTHENTICATED_REMOTE"] == "true"
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE" not in env_values(only(manifests, "Job"))
    assert "TENURE_ALLOW_UNAUTHENTICATED_REMOTE" not in only(render(chart), "ConfigMap")["data"]


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


def test_rendering_without_authentication_fails(chart: helm.Chart) -> None:
    """Secure by default: neither tokens nor the explicit allowance fails the render, saying
    what to set (the service would refuse to start on 0.0.0.0 anyway)."""
    with pytest.raises(helm.HelmRenderError, match=AUTH_REQUIRED) as failure:
        render(chart, {"auth": {"tokens": {"enabled": False}}})
    for value in ("auth.tokens.enabled", "auth.tokens.existingSecret", "auth.allowUnauthenticated"):
        assert value in str(failure.value)


def notes(chart: helm.Chart, *layers: Values) -> str:
    files = chart.render(merged(REQUIRED, *layers), name=RELEASE, namespace=NAMESPACE)
    (text,) = [text for path, text in files.items() if path.endswith("NOTES.txt")]
    return text


def test_notes_say_how_authentication_is_set_up(chart: helm.Chart) -> None:
    """The install notes tell how to add a principal when tokens are on, and warn loudly when
    authentication is off."""
    on = notes(chart)
    assert "tenure token new" in on
    assert "tenure-tokens" in on
    assert "WARNING" not in on
    assert "WARNING: authentication is OFF" in notes(chart, UNAUTHENTICATED)


def test_scraping_a_protected_service_needs_a_reader_token(chart: helm.Chart) -> None:
    """With tokens on, a ServiceMonitor without a bearer token Secret fails the render: every
    scrape of /metrics would be a 401."""
    with pytest.raises(helm.HelmRenderError, match=r"bearerTokenSecret\.name is required"):
        render(chart, {"serviceMonitor": {"enabled": True}})


def test_image_reference_uses_digest_when_given(chart: helm.Chart) -> None:
    """image.digest pins the bytes; otherwise the tag defaults to the chart's appVersion."""
    default = container(only(render(chart), "Deployment"))["image"]
    assert default == f"tenure:{chart.metadata['appVersion']}"
    pinned = container(only(render(chart, COMBINATIONS["pinned-digest"]), "Deployment"))["image"]
    assert pinned == "registry.example/tenure@sha256:" + "a" * 64


def test_settings_change_rolls_the_pods(chart: helm.Chart) -> None:
    """A settings change alters the pod template (checksum), so pods restart and read it."""

    def checksum(values: Values) -> str:
        deployment = only(render(chart, values), "Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum({}) != checksum({"config": {"logLevel": "debug"}})
    assert checksum({}) != checksum(UNAUTHENTICATED)
    assert checksum({}) != checksum({"auth": {"tokens": {"mountPath": "/etc/tokens"}}})


BAD_VALUES: dict[str, tuple[Values, str]] = {
    "replicaCount zero": ({"replicaCount": 0}, "/replicaCount"),
    "replicaCount string": ({"replicaCount": "two"}, "/replicaCount"),
    "replicaCount fraction": ({"replicaCount": 1.5}, "/replicaCount"),
    "database secret missing": ({"database": {"existingSecret": None}}, "existingSecret"),
    "database secret empty": ({"database": {"existingSecret": ""}}, "/database/existingSecret"),
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
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_fail_the_schema(chart: helm.Chart, case: str) -> None:
    """values.schema.json refuses the value, and the error names the offending key."""
    values, fragment = BAD_VALUES[case]
    with pytest.raises(helm.HelmValuesError) as failure:
        render(chart, values)
    assert fragment in str(failure.value)


def test_lint_reports_a_missing_database_secret() -> None:
    """`helm lint` on the bare chart fails: the database Secret is required."""
    report = helm.lint(CHART, strict=True)
    assert any("existingSecret" in error for error in report["errors"])


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
