"""deploy/configrestart/: every manifest listed, RBAC no wider than the controller needs, the
Deployment's flags valid, and the manifests accepted by a real apiserver (server-side dry
run) with the pod admitted under the "restricted" Pod Security profile."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcontrol.envtest import ControlPlane, find_binary
from kcontrol.manager import ControllerRegistry
from kcontrol.manager.flags import parse_args
from kcontrol_controllers.configrestart import SPEC
from tests.controllers import manifests

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "configrestart"
BUNDLE = "configrestart"


def documents() -> list[dict[str, Any]]:
    return manifests.documents(BUNDLE)


def find(kind: str, name: str) -> dict[str, Any]:
    return manifests.find(BUNDLE, kind, name)


def test_kustomization_lists_every_manifest() -> None:
    assert manifests.unlisted_manifests(BUNDLE) == set()


def test_cluster_role_grants_only_what_is_needed() -> None:
    rules = find("ClusterRole", "kcontrol:configrestart")["rules"]
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    read = {"get", "list", "watch"}
    expected = {("", r, v) for r in ("configmaps", "secrets") for v in read}
    expected |= {
        ("apps", r, v)
        for r in ("deployments", "statefulsets", "daemonsets")
        for v in read | {"patch"}
    }
    expected |= {
        (g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "update", "patch")
    }
    assert granted == expected


def test_deployment_flags_parse_and_match_the_lease_role() -> None:
    deployment = find("Deployment", "kcontrol-configrestart")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    registry = ControllerRegistry([SPEC])
    options, _ = parse_args(container["args"], registry.flags())
    assert [spec.name for spec in registry.select(options.controllers)] == ["configrestart"]
    assert options.election.leader_elect
    role = find("Role", "kcontrol:configrestart-leader-election")
    assert role["metadata"]["namespace"] == options.election.resource_namespace
    assert [options.election.resource_name] == role["rules"][1]["resourceNames"]
    key_path = options.controller_flags["configrestart-hmac-key-file"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts[str(Path(key_path).parent)] == "hmac-key"
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "kcontrol-configrestart"


@pytest.mark.integration
def test_server_side_dry_run_and_restricted_profile(control_plane: ControlPlane) -> None:
    def kubectl(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        done = subprocess.run(
            [
                str(find_binary("kubectl")),
                "--kubeconfig",
                str(control_plane.kubeconfig_path),
                *args,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode, done.stdout, done.stderr

    code, _, err = kubectl("apply", "-f", str(DEPLOY / "namespace.yaml"))
    assert code == 0, err
    code, out, err = kubectl("apply", "--dry-run=server", "-k", str(DEPLOY))
    assert code == 0, err
    assert "deployment.apps/kcontrol-configrestart" in out
    assert "networkpolicy.networking.k8s.io/kcontrol-configrestart" in out
    assert "PodSecurity" not in err, err
    template = find("Deployment", "kcontrol-configrestart")["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "configrestart-check", "namespace": "kcontrol-system"},
        "spec": template["spec"],
    }
    code, _, err = kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(pod))
    assert code == 0, err


def test_network_policy_selects_the_controller_and_allows_only_scrapes_in() -> None:
    policy = find("NetworkPolicy", "kcontrol-configrestart")
    labels = find("Deployment", "kcontrol-configrestart")["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= labels.items(), "the policy must select the controller's pods"
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["ports"] == [{"protocol": "TCP", "port": 10263}]
    assert ingress["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
