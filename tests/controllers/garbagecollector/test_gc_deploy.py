"""deploy/garbage-collector/: every manifest listed, the ClusterRole equal to upstream's
bootstrap role ``system:controller:generic-garbage-collector`` (its wildcard the only one, and
bound to the collector's own account only), the Deployment's flags valid (the collector
alone, unsharded), and the manifests accepted by a real apiserver (server-side dry run)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kcontrol.envtest import ControlPlane, find_binary
from kcontrol.manager import ControllerRegistry
from kcontrol.manager.flags import parse_args
from kcontrol_controllers.garbagecollector import SPEC
from tests.controllers import manifests

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy" / "garbage-collector"
BUNDLE = "garbage-collector"

UPSTREAM_RULES = {
    # rbacv1helpers.NewRule("get", "list", "watch", "patch", "update", "delete")
    #     .Groups("*").Resources("*")
    (frozenset({"*"}), "*", frozenset({"get", "list", "watch", "patch", "update", "delete"})),
    # eventsRule()
    (frozenset({"", "events.k8s.io"}), "events", frozenset({"create", "update", "patch"})),
}


def documents() -> list[dict[str, Any]]:
    return manifests.documents(BUNDLE)


def find(kind: str, name: str) -> dict[str, Any]:
    return manifests.find(BUNDLE, kind, name)


def test_kustomization_lists_every_manifest() -> None:
    assert manifests.unlisted_manifests(BUNDLE) == set()


def test_cluster_role_mirrors_the_bootstrap_role() -> None:
    rules = find("ClusterRole", "kcontrol:garbage-collector")["rules"]
    flattened = {
        (frozenset(rule["apiGroups"]), resource, frozenset(rule["verbs"]))
        for rule in rules
        for resource in rule["resources"]
    }
    assert flattened == UPSTREAM_RULES
    assert all("resourceNames" not in rule for rule in rules)


def test_the_wildcard_is_the_collectors_and_bound_to_its_account_only() -> None:
    wildcards = [
        (doc["metadata"]["name"], rule)
        for doc in documents()
        if doc["kind"] in ("ClusterRole", "Role")
        for rule in doc["rules"]
        if re.search(r"""["']\*["']""", json.dumps(rule))
    ]
    assert wildcards == [
        (
            "kcontrol:garbage-collector",
            {
                "apiGroups": ["*"],
                "resources": ["*"],
                "verbs": ["get", "list", "watch", "patch", "update", "delete"],
            },
        )
    ]
    bindings = [
        doc
        for bundle in ("", BUNDLE)  # deploy/ itself, and this bundle
        for doc in manifests.documents(bundle)
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and doc["roleRef"]["name"] == "kcontrol:garbage-collector"
    ]
    assert [b["subjects"] for b in bindings] == [
        [
            {
                "kind": "ServiceAccount",
                "name": "kcontrol-garbage-collector",
                "namespace": "kcontrol-system",
            }
        ]
    ]


def test_deployment_runs_the_collector_alone_and_unsharded() -> None:
    deployment = find("Deployment", "kcontrol-garbage-collector")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    registry = ControllerRegistry([SPEC])
    options, _ = parse_args(container["args"], registry.flags())
    options.validate()
    selected = registry.select(options.controllers, shards=options.election.shards)
    assert [spec.name for spec in selected] == ["garbage-collector-controller"]
    assert options.election.shards == 1
    assert options.election.leader_elect
    role = find("Role", "kcontrol:garbage-collector-leader-election")
    assert role["metadata"]["namespace"] == options.election.resource_namespace
    assert [options.election.resource_name] == role["rules"][1]["resourceNames"]
    assert options.controller_flags["concurrent-gc-syncs"] == 20
    spec = deployment["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "kcontrol-garbage-collector"


@pytest.mark.integration
def test_server_side_dry_run(control_plane: ControlPlane) -> None:
    def kubectl(*args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [
                str(find_binary("kubectl")),
                "--kubeconfig",
                str(control_plane.kubeconfig_path),
                *args,
            ],
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
    assert "deployment.apps/kcontrol-garbage-collector" in out
    assert "clusterrole.rbac.authorization.k8s.io/kcontrol:garbage-collector" in out
    assert "PodSecurity" not in err, err
