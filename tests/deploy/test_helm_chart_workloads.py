"""The Helm chart's workloads: the production shape by default, replicas that roll without
unavailability, locked-down pods, the database URL from a Secret, migrations in a hook Job,
settings the service accepts, scaling and disruption budgets."""

from __future__ import annotations

import helm_python as helm
import pytest
import yaml

from tests.deploy.helm_chart import (
    COMBINATIONS,
    SERVER_ONLY,
    UNAUTHENTICATED,
    Values,
    container,
    env_values,
    kinds,
    only,
    render,
    settings_of,
)


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
    # The settings' ConfigMap, not the dashboard's ("everything" renders both).
    (data,) = [
        m["data"] for m in manifests if m["kind"] == "ConfigMap" and "tenure.json" not in m["data"]
    ]
    settings = settings_of(
        data | {"TENURE_DATABASE_URL": "postgresql://tenure@db/tenure"}, monkeypatch
    )
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
