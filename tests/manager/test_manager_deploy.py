"""deploy/ and the Dockerfile: the manifests are accepted by a real apiserver (server-side dry
run), the pod passes the "restricted" Pod Security profile and gets the critical priority,
RBAC grants what upstream's bootstrap roles grant and nothing more, and the flags in the
Deployment are valid. The NetworkPolicy, the placement and the README's overlay:
test_manager_deploy_hardening.py."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.envtest import ControlPlane, find_binary
from kcontrol.manager.flags import parse_args

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVICE_ACCOUNT = "system:serviceaccount:kcontrol-system:kcontrol-manager"


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def find(kind: str, name: str) -> dict[str, Any]:
    for file in ("namespace.yaml", "rbac.yaml", "deployment.yaml", "networkpolicy.yaml"):
        for doc in documents(file):
            if doc["kind"] == kind and doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"{kind} {name} not in deploy/")


def kubectl(plane: ControlPlane, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(find_binary("kubectl")), "--kubeconfig", str(plane.kubeconfig_path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def installed_namespace(control_plane: ControlPlane) -> None:
    """The namespace for real (a dry run of namespaced objects needs it to exist)."""
    code, _, err = kubectl(control_plane, "apply", "-f", str(DEPLOY / "namespace.yaml"))
    assert code == 0, err


def manager_container() -> dict[str, Any]:
    deployment = find("Deployment", "kcontrol-manager")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["manager"]
    container: dict[str, Any] = containers[0]
    return container


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


def test_server_side_dry_run_accepts_everything(
    control_plane: ControlPlane, installed_namespace: None
) -> None:
    code, out, err = kubectl(control_plane, "apply", "--dry-run=server", "-k", str(DEPLOY))
    assert code == 0, err
    for kind_name in (
        "namespace/kcontrol-system",
        "serviceaccount/kcontrol-manager",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:deployment-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:replicaset-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:job-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:ttl-after-finished-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:cronjob-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:statefulset-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:pod-garbage-collector",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:replicationcontroller-controller",
        "clusterrole.rbac.authorization.k8s.io/kcontrol:disruption-controller",
        "role.rbac.authorization.k8s.io/kcontrol:leader-election",
        "deployment.apps/kcontrol-manager",
        "service/kcontrol-manager-metrics",
        "poddisruptionbudget.policy/kcontrol-manager",
        "networkpolicy.networking.k8s.io/kcontrol-manager",
    ):
        assert kind_name in out, out
    assert "PodSecurity" not in err, err


def _pod_from_template(mutate: Any = None) -> str:
    template = find("Deployment", "kcontrol-manager")["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kcontrol-manager-check", "namespace": "kcontrol-system"},
        "spec": template["spec"],
    }
    if mutate is not None:
        mutate(pod["spec"])
    return yaml.safe_dump(pod)


def test_pod_is_admitted_under_the_restricted_profile(
    control_plane: ControlPlane, installed_namespace: None
) -> None:
    code, _, err = kubectl(
        control_plane, "create", "--dry-run=server", "-f", "-", stdin=_pod_from_template()
    )
    assert code == 0, err

    def privileged(spec: dict[str, Any]) -> None:
        spec["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True

    code, _, err = kubectl(
        control_plane, "create", "--dry-run=server", "-f", "-", stdin=_pod_from_template(privileged)
    )
    assert code != 0, "the namespace must enforce the restricted profile"
    assert "violates PodSecurity" in err


SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
"""The value of the PriorityClass the API server creates at start-up (scheduling/v1)."""


def test_pod_gets_the_critical_priority(
    control_plane: ControlPlane, installed_namespace: None
) -> None:
    """priorityClassName names a class the API server has, and its Priority admission plugin
    resolves it into the pod's priority (a name it did not know would be refused)."""
    pod = find("Deployment", "kcontrol-manager")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    code, out, err = kubectl(
        control_plane, "get", "priorityclass", "system-cluster-critical", "-o", "json"
    )
    assert code == 0, err
    assert json.loads(out)["value"] == SYSTEM_CLUSTER_CRITICAL
    code, out, err = kubectl(
        control_plane,
        "create",
        "--dry-run=server",
        "-o",
        "json",
        "-f",
        "-",
        stdin=_pod_from_template(),
    )
    assert code == 0, err
    admitted = json.loads(out)["spec"]
    assert (admitted["priorityClassName"], admitted["priority"]) == (
        "system-cluster-critical",
        SYSTEM_CLUSTER_CRITICAL,
    )


def test_container_hardening_and_probes() -> None:
    deployment = find("Deployment", "kcontrol-manager")
    pod = deployment["spec"]["template"]["spec"]
    container = manager_container()
    assert deployment["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"].keys() >= {"cpu", "memory"}
    assert pod["serviceAccountName"] == "kcontrol-manager"


def test_deployment_flags_parse_and_match_rbac_and_ports() -> None:
    container = manager_container()
    options, _ = parse_args(container["args"])
    options.validate()
    assert options.election.leader_elect is True
    port = container["ports"][0]["containerPort"]
    assert options.serving.secure_port == port, "HTTPS only"
    assert options.serving.metrics_port == 0, "no plain-HTTP port in deploy/"
    service = find("Service", "kcontrol-manager-metrics")
    assert service["spec"]["ports"][0]["targetPort"] == container["ports"][0]["name"]
    role = find("Role", "kcontrol:leader-election")
    assert role["metadata"]["namespace"] == options.election.resource_namespace
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [options.election.resource_name],
            "verbs": ["get", "update"],
        }
    ]


# The bootstrap roles (parity.md section 7), as (groups, resources, verbs) per rule.
UPSTREAM: dict[str, set[tuple[frozenset[str], str, frozenset[str]]]] = {
    "kcontrol:deployment-controller": {
        (frozenset({"apps"}), "deployments", frozenset({"get", "list", "watch", "update"})),
        (frozenset({"apps"}), "deployments/status", frozenset({"update"})),
        (frozenset({"apps"}), "deployments/finalizers", frozenset({"update"})),
        (
            frozenset({"apps"}),
            "replicasets",
            frozenset({"get", "list", "watch", "create", "update", "patch", "delete"}),
        ),
        (frozenset({""}), "pods", frozenset({"get", "list", "watch", "update"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:replicaset-controller": {
        (frozenset({"apps"}), "replicasets", frozenset({"get", "list", "watch", "update"})),
        (frozenset({"apps"}), "replicasets/status", frozenset({"update"})),
        (frozenset({"apps"}), "replicasets/finalizers", frozenset({"update"})),
        (frozenset({""}), "pods", frozenset({"list", "watch", "patch", "create", "delete"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:job-controller": {
        (frozenset({"batch"}), "jobs", frozenset({"get", "list", "watch", "update", "patch"})),
        (frozenset({"batch"}), "jobs/status", frozenset({"update"})),
        (frozenset({"batch"}), "jobs/finalizers", frozenset({"update"})),
        (frozenset({""}), "pods", frozenset({"list", "watch", "create", "delete", "patch"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:pod-garbage-collector": {
        (frozenset({""}), "pods", frozenset({"list", "watch", "delete"})),
        (frozenset({""}), "nodes", frozenset({"get", "list"})),
        (frozenset({""}), "pods/status", frozenset({"patch"})),
        # not upstream's: kcontrol's node informer runs under this account
        (frozenset({""}), "nodes", frozenset({"list", "watch"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:disruption-controller": {
        (frozenset({"extensions", "apps"}), "deployments", frozenset({"get", "list", "watch"})),
        (frozenset({"apps", "extensions"}), "replicasets", frozenset({"get", "list", "watch"})),
        (frozenset({""}), "replicationcontrollers", frozenset({"get", "list", "watch"})),
        (frozenset({"policy"}), "poddisruptionbudgets", frozenset({"get", "list", "watch"})),
        (frozenset({"apps"}), "statefulsets", frozenset({"get", "list", "watch"})),
        (frozenset({"policy"}), "poddisruptionbudgets/status", frozenset({"update"})),
        (frozenset({""}), "pods/status", frozenset({"patch", "update"})),
        (frozenset({"*"}), "*/scale", frozenset({"get"})),
        # not upstream's: kcontrol's pod informer runs under this account
        (frozenset({""}), "pods", frozenset({"list", "watch"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:ttl-after-finished-controller": {
        (frozenset({"batch"}), "jobs", frozenset({"get", "list", "watch", "delete"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:cronjob-controller": {
        (frozenset({"batch"}), "cronjobs", frozenset({"get", "list", "watch", "update"})),
        (
            frozenset({"batch"}),
            "jobs",
            frozenset({"get", "list", "watch", "create", "update", "delete", "patch"}),
        ),
        (frozenset({"batch"}), "cronjobs/status", frozenset({"update"})),
        (frozenset({"batch"}), "cronjobs/finalizers", frozenset({"update"})),
        (frozenset({""}), "pods", frozenset({"list", "watch", "delete"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:daemonset-controller": {
        (frozenset({"apps"}), "daemonsets", frozenset({"get", "list", "watch"})),
        (frozenset({"apps"}), "daemonsets/status", frozenset({"update"})),
        (frozenset({"apps"}), "daemonsets/finalizers", frozenset({"update"})),
        (frozenset({""}), "nodes", frozenset({"list", "watch"})),
        (frozenset({""}), "pods", frozenset({"list", "watch", "create", "delete", "patch"})),
        (frozenset({""}), "pods/binding", frozenset({"create"})),
        (
            frozenset({"apps"}),
            "controllerrevisions",
            frozenset({"get", "list", "watch", "create", "delete", "update", "patch"}),
        ),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:statefulset-controller": {
        (frozenset({""}), "pods", frozenset({"list", "watch"})),
        (frozenset({"apps"}), "statefulsets", frozenset({"get", "list", "watch"})),
        (frozenset({"apps"}), "statefulsets/status", frozenset({"update"})),
        (frozenset({"apps"}), "statefulsets/finalizers", frozenset({"update"})),
        (frozenset({""}), "pods", frozenset({"get", "create", "delete", "update", "patch"})),
        (
            frozenset({"apps"}),
            "controllerrevisions",
            frozenset({"get", "create", "delete", "update", "patch", "list", "watch"}),
        ),
        (frozenset({""}), "persistentvolumeclaims", frozenset({"get", "create"})),
        # StatefulSetAutoDeletePVC (GA): the claims' owner references
        (frozenset({""}), "persistentvolumeclaims", frozenset({"update", "delete"})),
        # not upstream's: kcontrol's claim informer runs under this account
        (frozenset({""}), "persistentvolumeclaims", frozenset({"list", "watch"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
    "kcontrol:replicationcontroller-controller": {
        (frozenset({""}), "replicationcontrollers", frozenset({"get", "list", "watch", "update"})),
        (frozenset({""}), "replicationcontrollers/status", frozenset({"update"})),
        (frozenset({""}), "replicationcontrollers/finalizers", frozenset({"update"})),
        (frozenset({""}), "pods", frozenset({"list", "watch", "patch", "create", "delete"})),
        (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
    },
}


@pytest.mark.parametrize("role", sorted(UPSTREAM))
def test_cluster_roles_mirror_the_bootstrap_roles(role: str) -> None:
    rules = find("ClusterRole", role)["rules"]
    flattened = {
        (frozenset(rule["apiGroups"]), resource, frozenset(rule["verbs"]))
        for rule in rules
        for resource in rule["resources"]
    }
    assert flattened == UPSTREAM[role]
    assert all("resourceNames" not in rule for rule in rules)


SCALE_READ = {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get"]}
"""The one wildcard rule: upstream's disruption-controller reads the scale of a pod's
controller of any kind."""


def test_nothing_grants_secrets_or_wildcards() -> None:
    text = (DEPLOY / "rbac.yaml").read_text()
    assert "secrets" not in text
    wildcards = [
        (role["metadata"]["name"], rule)
        for role in documents("rbac.yaml")
        if role["kind"] in ("ClusterRole", "Role")
        for rule in role["rules"]
        if re.search(r"""["']\*["']""", json.dumps(rule))
    ]
    assert wildcards == [("kcontrol:disruption-controller", SCALE_READ)]


@pytest.mark.parametrize(
    ("verb", "resource", "namespace", "allowed"),
    [
        pytest.param("list", "pods", "default", True, id="list-pods"),
        pytest.param("create", "pods", "default", True, id="create-pods"),
        pytest.param("create", "replicasets.apps", "default", True, id="create-rs"),
        pytest.param("update", "deployments.apps/status", "default", True, id="deploy-status"),
        pytest.param("update", "replicationcontrollers/status", "default", True, id="rc-status"),
        pytest.param("create", "events", "default", True, id="events"),
        pytest.param("patch", "events.events.k8s.io", "default", True, id="events-v1"),
        pytest.param("create", "leases.coordination.k8s.io", "kube-system", True, id="lease-new"),
        pytest.param(
            "update", "leases.coordination.k8s.io/kcontrol-manager", "kube-system", True, id="own"
        ),
        pytest.param(
            "update",
            "leases.coordination.k8s.io/kube-controller-manager",
            "kube-system",
            False,
            id="others-lease",
        ),
        pytest.param("update", "leases.coordination.k8s.io", "default", False, id="lease-other-ns"),
        pytest.param("get", "secrets", "default", False, id="no-secrets"),
        pytest.param("list", "secrets", "kube-system", False, id="no-secrets-system"),
        pytest.param("delete", "jobs.batch", "default", True, id="ttl-delete-jobs"),
        pytest.param("update", "jobs.batch/status", "default", True, id="job-status"),
        pytest.param("patch", "pods", "default", True, id="job-patch-pods"),
        pytest.param("create", "jobs.batch", "default", True, id="cronjob-create-jobs"),
        pytest.param("update", "cronjobs.batch/status", "default", True, id="cronjob-status"),
        pytest.param("create", "cronjobs.batch", "default", False, id="no-create-cronjobs"),
        pytest.param("delete", "deployments.apps", "default", False, id="no-delete-deploy"),
        pytest.param("create", "deployments.apps", "default", False, id="no-create-deploy"),
        pytest.param("get", "configmaps", "default", False, id="no-configmaps"),
        pytest.param("delete", "nodes", "", False, id="no-nodes"),
        pytest.param("update", "persistentvolumeclaims", "default", True, id="sts-claim-owners"),
        pytest.param("create", "persistentvolumeclaims", "default", True, id="sts-claims"),
        pytest.param("create", "statefulsets.apps", "default", False, id="no-create-sts"),
        pytest.param("patch", "pods/status", "default", True, id="podgc-pod-status"),
        pytest.param("get", "nodes", "", True, id="podgc-get-nodes"),
        pytest.param("watch", "poddisruptionbudgets.policy", "default", True, id="pdb-watch"),
        pytest.param("update", "poddisruptionbudgets.policy", "default", False, id="no-pdb-update"),
    ],
)
def test_service_account_permissions(
    control_plane: ControlPlane,
    installed_rbac: None,
    verb: str,
    resource: str,
    namespace: str,
    allowed: bool,
) -> None:
    args = ["auth", "can-i", verb, resource, f"--as={SERVICE_ACCOUNT}"]
    args += [f"--namespace={namespace}"] if namespace else []
    code, out, err = kubectl(control_plane, *args)
    # can-i exits 0 for "yes" and 1 for "no"
    assert (out.strip(), code) == (("yes", 0) if allowed else ("no", 1)), err


@pytest.fixture(scope="module")
def installed_rbac(control_plane: ControlPlane) -> None:
    for name in ("namespace.yaml", "rbac.yaml"):
        code, _, err = kubectl(control_plane, "apply", "-f", str(DEPLOY / name))
        assert code == 0, err


def test_dockerfile_is_multi_stage_non_root_and_runs_the_manager() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)", dockerfile, flags=re.MULTILINE)
    assert stages == ["python:3.11-slim", "python:3.11-slim"]
    users = re.findall(r"^USER (\S+)", dockerfile, flags=re.MULTILINE)
    assert users == ["65532:65532"]
    pod = find("Deployment", "kcontrol-manager")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 65532
    assert re.search(r'^ENTRYPOINT \["kcontrol-manager"\]$', dockerfile, flags=re.MULTILINE)
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignored[1] == "*", "everything not listed stays out of the build context"
    assert "!kcontrol/" in ignored
    assert "!controllers/" in ignored
    assert not re.search(r"apt-get|apk |gcc|build-essential", dockerfile), "no compilers"
    assert "--only-binary=:all:" in dockerfile, "dependencies as wheels only"


MEBIBYTE = 1024 * 1024
UNITS = {"Ki": 1024, "Mi": MEBIBYTE, "Gi": 1024 * MEBIBYTE}


def quantity(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]i)", text)
    assert match is not None, f"unexpected quantity {text!r}"
    return int(match[1]) * UNITS[match[2]]


def measured_peak_rss() -> int:
    """The largest kcontrol-manager peak RSS (bytes) in bench/results/rollout.md's table."""
    lines = (ROOT / "bench" / "results" / "rollout.md").read_text().splitlines()
    for index, line in enumerate(lines):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if "kcontrol peak RSS MB" in cells:
            column = cells.index("kcontrol peak RSS MB")
            rows = [row.strip("|").split("|") for row in lines[index + 2 :]]
            peaks = []
            for row in rows:
                if len(row) != len(cells):
                    break
                peaks.append(float(row[column].replace(",", "")))
            assert peaks, "no rows under the peak RSS header"
            return int(max(peaks) * 1e6)
    raise AssertionError("bench/results/rollout.md has no 'kcontrol peak RSS MB' column")


def test_memory_is_sized_from_the_measured_rss() -> None:
    """The request covers the measured peak; the limit leaves room for caches growing with
    the cluster (deployment.yaml's comment gives the figures)."""
    resources = manager_container()["resources"]
    peak = measured_peak_rss()
    assert quantity(resources["requests"]["memory"]) >= peak * 0.95
    assert quantity(resources["limits"]["memory"]) >= 3 * peak
    assert "cpu" not in resources.get("limits", {}), "no CPU limit: it would delay lease renewals"
