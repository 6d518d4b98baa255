"""deploy/'s hardening: the NetworkPolicy (ingress to the secure port from the monitoring
namespace only, egress to the API server's ports and DNS only), the control-plane placement
Component, and deploy/README.md's install overlay (image by digest) and patches - rendered by
kubectl's kustomize, checked by a real apiserver, and the pods scheduled on the kwok cluster."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.envtest import ControlPlane, find_binary
from kcontrol.envtest.cluster import Cluster
from kcontrol.envtest.cluster._kwok import node_manifest
from kcontrol.manager.flags import parse_args

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NAMESPACE = "kcontrol-system"
MANAGER_LABELS = {"app.kubernetes.io/name": "kcontrol-manager"}
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
DIGEST = "sha256:" + "0123456789abcdef" * 4
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
WITHIN = 90


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for document in objects:
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise AssertionError(f"{kind} {name} not found")


def kubectl(
    plane: ControlPlane | None, *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """kubectl as the administrator of ``plane`` (no cluster: ``kubectl kustomize``)."""
    config = ["--kubeconfig", str(plane.kubeconfig_path)] if plane is not None else []
    done = subprocess.run(
        [str(find_binary("kubectl")), *config, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WITHIN + 30,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def policy() -> dict[str, Any]:
    return find(documents(DEPLOY / "networkpolicy.yaml"), "NetworkPolicy", "kcontrol-manager")


def manager_pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = find(objects, "Deployment", "kcontrol-manager")["spec"]["template"][
        "spec"
    ]
    return spec


# -- the NetworkPolicy, as written ------------------------------------------------------------


def test_the_policy_isolates_the_manager_pods_both_ways() -> None:
    deployment = find(documents(DEPLOY / "deployment.yaml"), "Deployment", "kcontrol-manager")
    spec = policy()["spec"]
    assert policy()["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert spec["podSelector"] == {"matchLabels": MANAGER_LABELS}
    assert MANAGER_LABELS.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert sorted(spec["policyTypes"]) == ["Egress", "Ingress"]
    for rule in (*spec["ingress"], *spec["egress"]):
        assert rule.get("ports"), f"a rule without ports allows every port: {rule}"


def test_ingress_is_the_secure_port_from_the_monitoring_namespace_only() -> None:
    [rule] = policy()["spec"]["ingress"]
    container = manager_pod_spec(documents(DEPLOY / "deployment.yaml"))["containers"][0]
    options, _ = parse_args(container["args"])
    assert rule["ports"] == [{"protocol": "TCP", "port": options.serving.secure_port}]
    assert [p["containerPort"] for p in container["ports"]] == [options.serving.secure_port]
    [peer] = rule["from"]
    assert peer == {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "monitoring"}}}
    # The scraper deploy/prometheus/ authorizes lives in that namespace.
    binding = find(
        documents(DEPLOY / "prometheus" / "rbac.yaml"),
        "ClusterRoleBinding",
        "kcontrol:metrics-reader",
    )
    assert {s["namespace"] for s in binding["subjects"]} == {"monitoring"}


def test_egress_is_the_api_server_ports_and_dns_only() -> None:
    api_server, dns = policy()["spec"]["egress"]
    assert "to" not in api_server, "any address: the API server's differ per cluster"
    assert api_server["ports"] == [
        {"protocol": "TCP", "port": 443},
        {"protocol": "TCP", "port": 6443},
    ]
    assert dns["to"] == [
        {
            "namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]


# -- deploy/README.md's overlay and patches -----------------------------------------------------


def readme_yaml_blocks() -> list[str]:
    """The ```yaml blocks of deploy/README.md, dedented (some sit in list items)."""
    text = (DEPLOY / "README.md").read_text()
    blocks = re.findall(r"^( *)```yaml\n(.*?)^\1```", text, flags=re.DOTALL | re.MULTILINE)
    return [re.sub(rf"^{indent}", "", body, flags=re.MULTILINE) for indent, body in blocks]


def readme_block(containing: str) -> dict[str, Any]:
    [block] = [b for b in readme_yaml_blocks() if containing in b]
    loaded: dict[str, Any] = yaml.safe_load(block)
    return loaded


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """The README's install overlay, verbatim but for the digest, as ``my-kcontrol/`` beside a
    ``kcontrol/`` checkout (a link to this one)."""
    (tmp_path / "kcontrol").symlink_to(ROOT)
    directory = tmp_path / "my-kcontrol"
    directory.mkdir()
    [block] = [b for b in readme_yaml_blocks() if "kind: Kustomization" in b]
    assert "sha256:<the 64 hex digits>" in block
    (directory / "kustomization.yaml").write_text(
        block.replace("sha256:<the 64 hex digits>", DIGEST)
    )
    return directory


def render(directory: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(kubectl(None, "kustomize", str(directory)).stdout) if d]


def test_the_readme_overlay_pins_the_digest_and_places_pods_on_the_control_plane(
    overlay: Path,
) -> None:
    objects = render(overlay)
    base = render(DEPLOY)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in base
    )
    pod = manager_pod_spec(objects)
    [container] = pod["containers"]
    assert container["image"] == f"registry.example.com/kcontrol-manager@{DIGEST}"
    assert pod["nodeSelector"] == {CONTROL_PLANE: ""}
    assert pod["tolerations"] == [
        {"key": CONTROL_PLANE, "operator": "Exists", "effect": "NoSchedule"}
    ]
    # deploy/ alone: the tag, and any node.
    plain = manager_pod_spec(base)
    assert plain["containers"][0]["image"] == "ghcr.io/kcontrol/kcontrol-manager:0.1.0"
    assert "nodeSelector" not in plain and "tolerations" not in plain


def test_the_readme_network_policy_patches_apply(
    overlay: Path, control_plane: ControlPlane, installed_namespace: None
) -> None:
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["patches"] = [
        *readme_block("/spec/ingress/0/from")["patches"],
        *readme_block("/spec/egress/0")["patches"],
    ]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    spec = find(render(overlay), "NetworkPolicy", "kcontrol-manager")["spec"]
    assert spec["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "prometheus"}}}
    ]
    assert spec["egress"][0]["to"] == [
        {"ipBlock": {"cidr": "10.96.0.1/32"}},
        {"ipBlock": {"cidr": "192.0.2.10/32"}},
    ]
    assert spec["egress"][1] == policy()["spec"]["egress"][1], "DNS unchanged"
    done = kubectl(control_plane, "apply", "--dry-run=server", "-k", str(overlay))
    assert "networkpolicy.networking.k8s.io/kcontrol-manager" in done.stdout


def test_the_readme_quota_for_critical_pods_is_valid(
    control_plane: ControlPlane, installed_namespace: None
) -> None:
    quota = readme_block("kind: ResourceQuota")
    assert quota["metadata"]["namespace"] == NAMESPACE
    [selector] = quota["spec"]["scopeSelector"]["matchExpressions"]
    pod = manager_pod_spec(documents(DEPLOY / "deployment.yaml"))
    assert selector["values"] == [pod["priorityClassName"]]
    kubectl(control_plane, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(quota))


@pytest.fixture
def installed_namespace(control_plane: ControlPlane) -> None:
    kubectl(control_plane, "apply", "-f", str(DEPLOY / "namespace.yaml"))


def test_the_policy_is_stored_as_written(
    control_plane: ControlPlane, installed_namespace: None
) -> None:
    kubectl(control_plane, "apply", "-f", str(DEPLOY / "networkpolicy.yaml"))
    stored = json.loads(
        kubectl(
            control_plane, "get", "networkpolicy", "kcontrol-manager", "-n", NAMESPACE, "-o", "json"
        ).stdout
    )
    assert stored["spec"] == policy()["spec"]


# -- on the kwok cluster: the pods schedule, with the placement and without ---------------------


@pytest.fixture
def installed(cluster: Cluster) -> Iterator[Cluster]:
    """deploy/'s namespace, RBAC (the pods' ServiceAccount) and NetworkPolicy, applied for
    real; the Deployment is not (nothing here would run it: pods are created from its
    template). Pods this test makes are deleted afterwards."""
    kubectl(
        cluster,
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=kcontrol-deploy",
        *("-f", str(DEPLOY / "namespace.yaml")),
        *("-f", str(DEPLOY / "rbac.yaml")),
        *("-f", str(DEPLOY / "networkpolicy.yaml")),
    )
    try:
        yield cluster
    finally:
        kubectl(
            cluster, "delete", "pods", "-n", NAMESPACE, "-l", "kcontrol.io/test=placement",
            "--wait=false", check=False,
        )  # fmt: skip


def create_pod(cluster: Cluster, name: str, spec: dict[str, Any]) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {**MANAGER_LABELS, "kcontrol.io/test": "placement"},
        },
        "spec": spec,
    }
    kubectl(cluster, "create", "-f", "-", stdin=json.dumps(pod))


def get(cluster: Cluster, *what: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", *what, "-o", "json").stdout)
    return found


def wait(cluster: Cluster, condition: str, *what: str) -> None:
    kubectl(cluster, "wait", f"--for={condition}", f"--timeout={WITHIN}s", *what)


def test_deploy_pods_schedule_on_any_kwok_node(installed: Cluster) -> None:
    name = f"manager-{uuid.uuid4().hex[:6]}"
    create_pod(installed, name, manager_pod_spec(documents(DEPLOY / "deployment.yaml")))
    wait(installed, "condition=Ready", "pod", name, "-n", NAMESPACE)
    pod = get(installed, "pod", name, "-n", NAMESPACE)
    assert pod["spec"]["priority"] == 2_000_000_000
    node = get(installed, "node", pod["spec"]["nodeName"])
    assert CONTROL_PLANE not in node["metadata"]["labels"]
    stored = get(installed, "networkpolicy", "kcontrol-manager", "-n", NAMESPACE)
    assert stored["spec"] == policy()["spec"]


def test_placed_pods_wait_for_a_control_plane_node_and_tolerate_its_taint(
    installed: Cluster, overlay: Path
) -> None:
    """With the README's overlay, no kwok node fits; a node labelled and tainted as kubeadm
    does a control-plane node takes the pod."""
    name = f"placed-{uuid.uuid4().hex[:6]}"
    create_pod(installed, name, manager_pod_spec(render(overlay)))
    wait(
        installed,
        'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}=Unschedulable',
        "pod", name, "-n", NAMESPACE,
    )  # fmt: skip
    node = node_manifest(f"control-plane-{uuid.uuid4().hex[:6]}", labels={CONTROL_PLANE: ""})
    node["spec"]["taints"] = [{"key": CONTROL_PLANE, "effect": "NoSchedule"}]
    node_name = node["metadata"]["name"]
    kubectl(installed, "create", "-f", "-", stdin=json.dumps(node))
    try:
        wait(installed, "condition=Ready", "pod", name, "-n", NAMESPACE)
        assert get(installed, "pod", name, "-n", NAMESPACE)["spec"]["nodeName"] == node_name
    finally:
        kubectl(installed, "delete", "pod", name, "-n", NAMESPACE, check=False)
        kubectl(installed, "delete", "node", node_name, "--wait=false", check=False)


def test_the_sharded_component_runs_three_replicas_over_six_shards_with_leases_of_their_own(
    tmp_path: Path, control_plane: ControlPlane, installed_namespace: None
) -> None:
    """deploy/sharded: the flags parse (6 shards, the election in kcontrol-system), three
    replicas, and the Lease rights are a Role in kcontrol-system only - never over
    kube-system's Leases; the API server accepts it all."""
    (tmp_path / "kcontrol").symlink_to(ROOT)
    directory = tmp_path / "my-kcontrol"
    directory.mkdir()
    (directory / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../kcontrol/deploy"],
                "components": ["../kcontrol/deploy/sharded"],
            }
        )
    )
    objects = render(directory)
    deployment = find(objects, "Deployment", "kcontrol-manager")
    assert deployment["spec"]["replicas"] == 3
    [container] = manager_pod_spec(objects)["containers"]
    options, _ = parse_args(container["args"])
    assert options.election.shards == 6
    assert options.election.leader_elect
    assert options.election.resource_namespace == "kcontrol-system"
    role = find(objects, "Role", "kcontrol:sharded-election")
    assert role["metadata"]["namespace"] == "kcontrol-system"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "list", "create", "update", "delete"],
        }
    ]
    binding = find(objects, "RoleBinding", "kcontrol:sharded-election")
    assert binding["metadata"]["namespace"] == "kcontrol-system"
    done = kubectl(control_plane, "apply", "--dry-run=server", "-k", str(directory))
    assert "role.rbac.authorization.k8s.io/kcontrol:sharded-election" in done.stdout
