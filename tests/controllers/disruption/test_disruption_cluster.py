"""kcontrol's disruption controller on the test cluster, after upstream's
test/integration/disruption and the eviction tests: PDB statuses over the pods of a
Deployment, a ReplicaSet, a StatefulSet and a custom resource with ``/scale`` (pods that
kube-scheduler binds and kwok makes ready), integer and percentage budgets, an empty
selector, the eviction API honouring the status kcontrol computed (an eviction allowed while
``disruptionsAllowed`` is 1, refused with 429 at 0), and a stale ``DisruptionTarget``
condition set back to False.

kube-controller-manager's own disruption-controller is switched off for the tests (and put
back after), so only kcontrol writes PDB statuses. The Deployment and ReplicaSet pods come
from kcontrol's own controllers (the test cluster's kube-controller-manager runs neither);
StatefulSet pods from kube-controller-manager's.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import (
    CUSTOMRESOURCEDEFINITIONS,
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    ApiClient,
    Object,
    Resource,
)
from kcontrol.envtest.cluster import BEHAVIOR_LABEL, BEHAVIOR_NEVER_READY, Cluster
from kcontrol.metatime import format_time
from kcontrol_controllers.deployment import SPEC as DEPLOYMENT_SPEC
from kcontrol_controllers.disruption import NAME, SPEC
from kcontrol_controllers.replicaset import SPEC as REPLICASET_SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    deployment,
    is_ready,
    kubectl,
    pods_of,
    running_manager,
    without_kcm_controllers,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Status = tuple[int, int, int, int]
"""``(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)``."""


def pdb(name: str, selector: dict[str, Any], **spec: Any) -> Object:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": selector, **spec},
    }


def template(labels: dict[str, str]) -> Object:
    return {
        "metadata": {"labels": labels},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": "registry.example/app:1"}],
        },
    }


def replica_set(name: str, replicas: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(labels),
        },
    }


def stateful_set(name: str, replicas: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": template(labels),
        },
    }


async def status_of(client: ApiClient, ns: str, name: str) -> tuple[Status, Object]:
    current = await client.get(PODDISRUPTIONBUDGETS, name, namespace=ns)
    s = current.get("status") or {}
    numbers = (
        s.get("disruptionsAllowed", -1),
        s.get("currentHealthy", -1),
        s.get("desiredHealthy", -1),
        s.get("expectedPods", -1),
    )
    return numbers, current


async def wait_status(client: ApiClient, ns: str, name: str, want: Status) -> Object:
    """Poll until the PDB's numbers are ``want`` (and its status observed its generation);
    the PDB."""
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        numbers, seen["pdb"] = await status_of(client, ns, name)
        generation = seen["pdb"]["metadata"].get("generation")
        return numbers == want and seen["pdb"]["status"].get("observedGeneration") == generation

    await poll(
        reached,
        within=WITHIN,
        interval=0.3,
        message=lambda: f"PDB {name}: wanted {want}, status {seen.get('pdb', {}).get('status')}",
    )
    pdb_: Object = seen["pdb"]
    return pdb_


def allowed_condition(obj: Object) -> dict[str, Any]:
    for condition in obj["status"].get("conditions") or ():
        if condition["type"] == "DisruptionAllowed":
            return dict(condition)
    raise AssertionError(f"no DisruptionAllowed condition in {obj['status']}")


async def ready_pods(client: ApiClient, ns: str, selector: str, count: int) -> list[Object]:
    found: dict[str, list[Object]] = {}

    async def ready() -> bool:
        found["pods"] = [p for p in active(await pods_of(client, ns, selector)) if is_ready(p)]
        return len(found["pods"]) == count

    await poll(ready, within=WITHIN, interval=0.3, message=f"{count} ready pods of {selector}")
    return found["pods"]


async def evict(cluster: Cluster, ns: str, pod: str) -> tuple[int, str]:
    """POST an Eviction of ``pod`` (``kubectl create --raw``): kubectl's exit code and
    error output."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": ns},
    }
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "eviction.json"
        path.write_text(json.dumps(body))
        run = await kubectl(
            cluster,
            ns,
            "create",
            "--raw",
            f"/api/v1/namespaces/{ns}/pods/{pod}/eviction",
            "-f",
            str(path),
        )
    return run.code, run.err


def manager(cluster: Cluster, ns: str) -> Any:
    return running_manager(cluster, SPEC, DEPLOYMENT_SPEC, REPLICASET_SPEC, shards=1, namespace=ns)


async def test_deployment_pdb_and_the_eviction_api(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """minAvailable 50% of a Deployment of 3: one eviction is allowed, the next refused
    with 429 until the replacement pod is ready."""
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        await client.create(DEPLOYMENTS, deployment("web", 3), namespace=ns)
        await client.create(
            PODDISRUPTIONBUDGETS,
            pdb("web", {"matchLabels": {"app": "web"}}, minAvailable="50%"),
            namespace=ns,
        )
        pods = await ready_pods(client, ns, "app=web", 3)
        stored = await wait_status(client, ns, "web", (1, 3, 2, 3))
        condition = allowed_condition(stored)
        assert (condition["status"], condition["reason"]) == ("True", "SufficientPods")

        first, second = sorted(p["metadata"]["name"] for p in pods)[:2]
        code, err = await evict(cluster, ns, first)
        assert code == 0, err
        # The eviction API took the disruption; kcontrol sees the pod terminating (or gone).
        stored = await wait_status(client, ns, "web", (0, 2, 2, 3))
        condition = allowed_condition(stored)
        assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")
        code, err = await evict(cluster, ns, second)
        if code == 0:  # the replacement pod was already ready: the budget allowed it again
            pytest.skip("the replacement became ready before the second eviction")
        assert "429" in err or "disruption budget" in err, err
        assert (await client.get(PODS, second, namespace=ns))["metadata"].get(
            "deletionTimestamp"
        ) is None

        # The Deployment replaces the evicted pod: the budget allows one disruption again.
        await wait_status(client, ns, "web", (1, 3, 2, 3))


async def test_replica_set_percentage_and_integer_budgets(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """maxUnavailable 34% of a ReplicaSet of 3 rounds up to 2 (1 desired); minAvailable 2
    over another (an integer: the pods are counted, not the scale). Scaled to 5, both
    follow. (Each pod has one budget: a pod's events queue one PDB only, as upstream.)"""
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        await client.create(REPLICASETS, replica_set("a", 3), namespace=ns)
        await client.create(REPLICASETS, replica_set("b", 3), namespace=ns)
        await ready_pods(client, ns, "app=a", 3)
        await ready_pods(client, ns, "app=b", 3)
        await client.create(
            PODDISRUPTIONBUDGETS,
            pdb("percent", {"matchLabels": {"app": "a"}}, maxUnavailable="34%"),
            namespace=ns,
        )
        await client.create(
            PODDISRUPTIONBUDGETS,
            pdb("integer", {"matchLabels": {"app": "b"}}, minAvailable=2),
            namespace=ns,
        )
        await wait_status(client, ns, "percent", (2, 3, 1, 3))
        await wait_status(client, ns, "integer", (1, 3, 2, 3))

        for name in ("a", "b"):
            await client.patch(REPLICASETS, name, {"spec": {"replicas": 5}}, namespace=ns)
        await ready_pods(client, ns, "app=a", 5)
        await ready_pods(client, ns, "app=b", 5)
        await wait_status(client, ns, "percent", (2, 5, 3, 5))  # 34% of 5: 2 unavailable
        await wait_status(client, ns, "integer", (3, 5, 2, 5))


async def test_stateful_set_budget(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """maxUnavailable 1 and 50% over a StatefulSet of 2 (kube-controller-manager's pods)."""
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        await client.create(STATEFULSETS, stateful_set("db", 2), namespace=ns)
        await ready_pods(client, ns, "app=db", 2)
        selector = {"matchLabels": {"app": "db"}}
        await client.create(
            PODDISRUPTIONBUDGETS, pdb("one", selector, maxUnavailable=1), namespace=ns
        )
        await client.create(
            PODDISRUPTIONBUDGETS, pdb("half", selector, maxUnavailable="50%"), namespace=ns
        )
        await wait_status(client, ns, "one", (1, 2, 1, 2))
        await wait_status(client, ns, "half", (1, 2, 1, 2))


async def test_stale_disruption_target_is_set_to_false(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """upstream's TestStalePodDisruption: a True DisruptionTarget on a pod that is not being
    deleted, older than two minutes, is set to False. The pod has no controller: an empty
    selector with an integer minAvailable still counts it (upstream's TestEmptySelector)."""
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "target", "labels": {"app": "t"}},
            "spec": template({})["spec"],
        }
        await client.create(PODS, pod, namespace=ns)
        await ready_pods(client, ns, "app=t", 1)
        await client.create(
            PODDISRUPTIONBUDGETS, pdb("everything", {}, minAvailable=1), namespace=ns
        )
        await wait_status(client, ns, "everything", (0, 1, 1, 1))
        since = format_time(datetime.now(UTC) - timedelta(minutes=3))
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "test",
            "lastTransitionTime": since,
        }
        await client.patch(
            PODS,
            "target",
            {"status": {"conditions": [condition]}},
            namespace=ns,
            subresource="status",
        )
        seen: dict[str, Any] = {}

        async def cleared() -> bool:
            current = await client.get(PODS, "target", namespace=ns)
            found = [
                c
                for c in current["status"].get("conditions") or ()
                if c["type"] == "DisruptionTarget"
            ]
            seen["conditions"] = found
            return bool(found) and found[0]["status"] == "False"

        await poll(cleared, within=WITHIN, interval=0.3, message=lambda: f"conditions {seen}")
        assert "reason" not in seen["conditions"][0]


async def test_unhealthy_pod_eviction_policy(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """upstream's unhealthyPodEvictionPolicy eviction tests: two ready pods and one that
    never becomes ready under minAvailable 3 (0 allowed, 2 of 3 healthy). With
    IfHealthyBudget (the default) the unready pod cannot be evicted; once the policy is
    AlwaysAllow - and kcontrol has observed the PDB's new generation, which the eviction API
    waits for - it can."""
    ns = cluster_namespace
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        for name, labels in (
            ("ready-0", {"app": "u"}),
            ("ready-1", {"app": "u"}),
            ("unready", {"app": "u", BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}),
        ):
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "labels": labels},
                "spec": template({})["spec"],
            }
            await client.create(PODS, body, namespace=ns)
        await ready_pods(client, ns, "app=u", 2)
        selector = {"matchLabels": {"app": "u"}}
        await client.create(PODDISRUPTIONBUDGETS, pdb("u", selector, minAvailable=3), namespace=ns)
        await wait_status(client, ns, "u", (0, 2, 3, 3))
        code, err = await evict(cluster, ns, "unready")
        assert code != 0 and ("429" in err or "disruption budget" in err), err

        await client.patch(
            PODDISRUPTIONBUDGETS,
            "u",
            {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}},
            namespace=ns,
        )
        stored = await wait_status(client, ns, "u", (0, 2, 3, 3))
        assert stored["status"]["observedGeneration"] == 2
        code, err = await evict(cluster, ns, "unready")
        assert code == 0, err
        code, err = await evict(cluster, ns, "ready-0")
        assert code != 0, "a ready pod still needs an allowed disruption"


WIDGETS = Resource("scale.kcontrol.io", "v1", "widgets", "Widget")


def widget_crd() -> Object:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.scale.kcontrol.io"},
        "spec": {
            "group": "scale.kcontrol.io",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer"}},
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"replicas": {"type": "integer"}},
                                },
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                }
            ],
        },
    }


async def test_custom_resource_with_scale(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """upstream's TestPDBWithScaleSubresource: pods controlled by a custom resource whose
    ``/scale`` says 10; maxUnavailable 40% of it (4 up, 6 desired) with 2 ready pods."""
    ns = cluster_namespace
    try:
        await client.create(CUSTOMRESOURCEDEFINITIONS, widget_crd())
    except Exception as error:  # created by an earlier run of this session
        if "AlreadyExists" not in type(error).__name__:
            raise

    async def served() -> bool:
        try:
            await client.list(WIDGETS, namespace=ns)
        except Exception:
            return False
        return True

    await poll(served, within=WITHIN, interval=0.3, message="the Widget CRD is served")
    async with without_kcm_controllers(cluster, NAME), manager(cluster, ns):
        widget = await client.create(
            WIDGETS,
            {
                "apiVersion": "scale.kcontrol.io/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"replicas": 10},
            },
            namespace=ns,
        )
        owner = {
            "apiVersion": "scale.kcontrol.io/v1",
            "kind": "Widget",
            "name": "w",
            "uid": widget["metadata"]["uid"],
            "controller": True,
        }
        for i in range(2):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"w-{i}", "labels": {"app": "w"}, "ownerReferences": [owner]},
                "spec": template({})["spec"],
            }
            await client.create(PODS, pod, namespace=ns)
        await ready_pods(client, ns, "app=w", 2)
        await client.create(
            PODDISRUPTIONBUDGETS,
            pdb("w", {"matchLabels": {"app": "w"}}, maxUnavailable="40%"),
            namespace=ns,
        )
        await wait_status(client, ns, "w", (0, 2, 6, 10))
