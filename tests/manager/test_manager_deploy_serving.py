"""deploy/ and the secure port: HTTPS only (probes with scheme HTTPS, no plain-HTTP port,
no scrape annotations), the manager's own delegation RBAC, the ClusterRole a scraper needs,
and deploy/prometheus/'s ServiceMonitor and bindings - checked against a real apiserver."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.envtest import ControlPlane, find_binary
from kcontrol.manager._options import DEFAULT_LEASE_NAME, DEFAULT_SECURE_PORT
from kcontrol.manager.flags import parse_args
from kcontrol.serving._authz import AlwaysAllowPaths

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
SERVICE_ACCOUNT = "system:serviceaccount:kcontrol-system:kcontrol-manager"
SCRAPER = "system:serviceaccount:monitoring:prometheus-k8s"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(path: Path, kind: str, name: str) -> dict[str, Any]:
    for document in documents(path):
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise AssertionError(f"{kind} {name} not in {path}")


def kubectl(plane: ControlPlane, *args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(find_binary("kubectl")), "--kubeconfig", str(plane.kubeconfig_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def container() -> dict[str, Any]:
    deployment = find(DEPLOY / "deployment.yaml", "Deployment", "kcontrol-manager")
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def test_the_manager_serves_https_only_on_its_own_port() -> None:
    manager = container()
    options, _ = parse_args(manager["args"])
    options.validate()
    assert options.serving.secure_port == DEFAULT_SECURE_PORT != 10257
    assert options.serving.metrics_port == 0
    assert not any(arg.startswith("--metrics-port") for arg in manager["args"])
    assert options.election.resource_name == DEFAULT_LEASE_NAME
    assert manager["ports"] == [
        {"name": "https", "containerPort": DEFAULT_SECURE_PORT, "protocol": "TCP"}
    ]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = manager[probe]["httpGet"]
        assert (get["port"], get["scheme"]) == ("https", "HTTPS"), probe
        always_allowed = AlwaysAllowPaths(options.serving.authorization_always_allow_paths)
        assert always_allowed.allows(get["path"]), "probes need no credentials"
    template = find(DEPLOY / "deployment.yaml", "Deployment", "kcontrol-manager")["spec"][
        "template"
    ]
    assert "prometheus.io/scrape" not in (template["metadata"].get("annotations") or {})
    service = find(DEPLOY / "deployment.yaml", "Service", "kcontrol-manager-metrics")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": DEFAULT_SECURE_PORT, "targetPort": "https", "protocol": "TCP"}
    ]
    assert "annotations" not in service["metadata"], "no plain-HTTP annotation scraping"


def test_the_scraper_role_grants_get_on_metrics_only() -> None:
    role = find(DEPLOY / "rbac.yaml", "ClusterRole", "kcontrol:metrics-reader")
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_manager_may_delegate_authentication_and_authorization() -> None:
    delegator = find(DEPLOY / "rbac.yaml", "ClusterRoleBinding", "kcontrol:auth-delegator")
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    reader = find(
        DEPLOY / "rbac.yaml", "RoleBinding", "kcontrol:extension-apiserver-authentication-reader"
    )
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "extension-apiserver-authentication-reader",
    }
    for binding in (delegator, reader):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "kcontrol-manager", "namespace": "kcontrol-system"}
        ]


def test_the_service_monitor_scrapes_https_with_a_bearer_token() -> None:
    kustomization = yaml.safe_load((PROMETHEUS / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == {
        p.name for p in PROMETHEUS.glob("*.yaml") if p.name != "kustomization.yaml"
    }
    monitor = find(PROMETHEUS / "servicemonitor.yaml", "ServiceMonitor", "kcontrol-manager")
    service = find(DEPLOY / "deployment.yaml", "Service", "kcontrol-manager-metrics")
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    labels = monitor["spec"]["selector"]["matchLabels"]
    assert labels.items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    binding = find(PROMETHEUS / "rbac.yaml", "ClusterRoleBinding", "kcontrol:metrics-reader")
    assert binding["roleRef"]["name"] == "kcontrol:metrics-reader"


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane) -> None:
    for path in (DEPLOY / "namespace.yaml", DEPLOY / "rbac.yaml", PROMETHEUS / "rbac.yaml"):
        code, _, err = kubectl(control_plane, "apply", "-f", str(path))
        assert code == 0, err


@pytest.mark.parametrize(
    ("user", "args", "allowed"),
    [
        pytest.param(
            SERVICE_ACCOUNT,
            ["create", "tokenreviews.authentication.k8s.io"],
            True,
            id="tokenreviews",
        ),
        pytest.param(
            SERVICE_ACCOUNT,
            ["create", "subjectaccessreviews.authorization.k8s.io"],
            True,
            id="subjectaccessreviews",
        ),
        pytest.param(
            SERVICE_ACCOUNT,
            ["get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"],
            True,
            id="client-ca",
        ),
        pytest.param(
            SERVICE_ACCOUNT,
            ["get", "configmaps/kube-root-ca.crt", "-n", "kube-system"],
            False,
            id="no-other-configmaps",
        ),
        pytest.param(SERVICE_ACCOUNT, ["get", "/metrics"], False, id="manager-no-metrics"),
        pytest.param(SCRAPER, ["get", "/metrics"], True, id="scraper-metrics"),
        pytest.param(SCRAPER, ["get", "/debug/pprof"], False, id="scraper-metrics-only"),
        pytest.param(
            SCRAPER,
            ["list", "endpointslices.discovery.k8s.io", "-n", "kcontrol-system"],
            True,
            id="discovery",
        ),
        pytest.param(SCRAPER, ["list", "pods", "-n", "default"], False, id="discovery-own-ns-only"),
        pytest.param(
            "system:serviceaccount:monitoring:other", ["get", "/metrics"], False, id="others-no"
        ),
    ],
)
def test_permissions(
    control_plane: ControlPlane, installed: None, user: str, args: list[str], allowed: bool
) -> None:
    code, out, err = kubectl(control_plane, "auth", "can-i", *args, f"--as={user}")
    assert (out.strip(), code) == (("yes", 0) if allowed else ("no", 1)), err


def test_server_side_dry_run_accepts_the_prometheus_rbac(
    control_plane: ControlPlane, installed: None
) -> None:
    code, out, err = kubectl(
        control_plane, "apply", "--dry-run=server", "-f", str(PROMETHEUS / "rbac.yaml")
    )
    assert code == 0, err
    assert "clusterrolebinding.rbac.authorization.k8s.io/kcontrol:metrics-reader" in out
