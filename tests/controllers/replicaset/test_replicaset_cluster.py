"""kcontrol's ReplicaSet controller on the test cluster: pods that kube-scheduler binds and
kwok makes ready, kube-controller-manager's quota and garbage collector, and a takeover from
KCM's own replicaset controller.

Each test runs the controller in this process through the manager (as kcontrol-manager would,
without leader election) and waits on outcomes with deadline-bounded polls.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest

from kcontrol.client import PODS, REPLICASETS, ApiClient, Object, Resource
from kcontrol.envtest.cluster import (
    ALL_CONTROLLERS,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    WITHOUT_WORKLOAD_CONTROLLERS,
    Cluster,
)
from kcontrol.errors import NotFound
from kcontrol_controllers.replicaset import SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    condition,
    events_for,
    is_ready,
    pods_of,
    running_manager,
    uids,
)
from tests.integration.helpers import poll

RESOURCEQUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def replicaset(name: str, replicas: int, *, min_ready_seconds: int = 0) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready_seconds,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }


async def scale(client: ApiClient, namespace: str, name: str, replicas: int) -> None:
    await client.patch(REPLICASETS, name, {"spec": {"replicas": replicas}}, namespace=namespace)


async def wait_ready(
    client: ApiClient, namespace: str, name: str, replicas: int, *, within: float = WITHIN
) -> Object:
    """Wait until the RS has exactly ``replicas`` active pods, all ready, and its status says
    so for its current generation; returns the RS."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        rs = await client.get(REPLICASETS, name, namespace=namespace)
        pods = active(await pods_of(client, namespace, f"app={name}"))
        status = rs.get("status") or {}
        seen.update(status=status, pods=len(pods), ready=sum(map(is_ready, pods)))
        return (
            len(pods) == replicas
            and all(map(is_ready, pods))
            and status.get("replicas") == replicas
            and status.get("readyReplicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas
            and status.get("observedGeneration") == rs["metadata"]["generation"]
        )

    await poll(done, within=within, message=lambda: f"{name} not ready at {replicas}: {seen}")
    return await client.get(REPLICASETS, name, namespace=namespace)


async def test_scales_up_and_down_through_ready_pods(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with running_manager(cluster, SPEC):
        await client.create(REPLICASETS, replicaset("web", 3), namespace=ns)
        rs = await wait_ready(client, ns, "web", 3)
        pods = active(await pods_of(client, ns, "app=web"))
        for pod in pods:
            refs = pod["metadata"]["ownerReferences"]
            assert refs == [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": rs["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            assert pod["metadata"]["generateName"] == "web-"
        assert rs["status"]["fullyLabeledReplicas"] == 3

        await scale(client, ns, "web", 5)
        await wait_ready(client, ns, "web", 5)
        await scale(client, ns, "web", 1)
        await wait_ready(client, ns, "web", 1)

        reasons = [reason for reason, _ in await events_for(client, ns, "web")]
        assert reasons.count("SuccessfulCreate") >= 5
        assert "SuccessfulDelete" in reasons


async def test_quota_denial_slow_start_then_convergence_when_lifted(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "pods"},
        "spec": {"hard": {"pods": "2"}},
    }
    await client.create(RESOURCEQUOTAS, quota, namespace=ns)

    async def quota_counted() -> bool:  # admission denies everything until KCM fills status
        got = await client.get(RESOURCEQUOTAS, "pods", namespace=ns)
        return "hard" in (got.get("status") or {})

    await poll(quota_counted, within=WITHIN, message="KCM never computed the quota's status")

    async with running_manager(cluster, SPEC):
        await client.create(REPLICASETS, replicaset("capped", 5), namespace=ns)

        async def failure_reported() -> bool:
            rs = await client.get(REPLICASETS, "capped", namespace=ns)
            failure = condition(rs, "ReplicaFailure")
            return failure is not None and failure["status"] == "True"

        await poll(failure_reported, within=WITHIN, message="no ReplicaFailure condition")
        rs = await client.get(REPLICASETS, "capped", namespace=ns)
        failure = condition(rs, "ReplicaFailure")
        assert failure is not None
        assert failure["reason"] == "FailedCreate"
        assert "exceeded quota" in failure["message"]
        events = await events_for(client, ns, "capped")
        assert any(r == "FailedCreate" and "Error creating:" in m for r, m in events), events
        assert len(await pods_of(client, ns, "app=capped")) == 2

        # Lifting the quota is enough: the skipped creations lowered the expectations, so the
        # next sync creates the rest without waiting for them to expire (5 minutes).
        await client.patch(RESOURCEQUOTAS, "pods", {"spec": {"hard": {"pods": "20"}}}, namespace=ns)
        rs = await wait_ready(client, ns, "capped", 5)
        assert condition(rs, "ReplicaFailure") is None, "ReplicaFailure must be cleared"


async def test_scale_down_removes_unready_then_cheapest_pods(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with running_manager(cluster, SPEC):
        await client.create(REPLICASETS, replicaset("ranked", 3), namespace=ns)
        await wait_ready(client, ns, "ranked", 3)
        pods = active(await pods_of(client, ns, "app=ranked"))
        cheap = pods[1]["metadata"]["name"]
        await client.patch(
            PODS, cheap, {"metadata": {"annotations": {DELETION_COST: "-100"}}}, namespace=ns
        )
        # An orphan that matches the selector, runs but never becomes ready, and claims to be
        # expensive to delete: readiness ranks before deletion cost.
        orphan = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "unready-orphan",
                "labels": {"app": "ranked", BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY},
                "annotations": {DELETION_COST: "1000"},
            },
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
        }
        await client.create(PODS, orphan, namespace=ns)

        async def orphan_gone() -> bool:
            try:
                await client.get(PODS, "unready-orphan", namespace=ns)
            except NotFound:
                return True
            return False

        await poll(orphan_gone, within=WITHIN, message="the unready adopted pod was not deleted")
        assert {p["metadata"]["name"] for p in active(await pods_of(client, ns, "app=ranked"))} == {
            p["metadata"]["name"] for p in pods
        }, "a ready pod was deleted instead of the unready one"

        await scale(client, ns, "ranked", 2)
        await wait_ready(client, ns, "ranked", 2)
        left = {p["metadata"]["name"] for p in active(await pods_of(client, ns, "app=ranked"))}
        assert cheap not in left, "the pod with the lowest deletion cost must go first"


async def test_pods_are_released_and_adopted_as_their_labels_change(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with running_manager(cluster, SPEC):
        rs = await client.create(REPLICASETS, replicaset("owner", 2), namespace=ns)
        await wait_ready(client, ns, "owner", 2)
        leaving = active(await pods_of(client, ns, "app=owner"))[0]["metadata"]["name"]
        await client.patch(PODS, leaving, {"metadata": {"labels": {"app": "other"}}}, namespace=ns)

        async def released() -> bool:
            pod = await client.get(PODS, leaving, namespace=ns)
            return not pod["metadata"].get("ownerReferences")

        await poll(released, within=WITHIN, message="the relabelled pod kept its ownerReference")
        await wait_ready(client, ns, "owner", 2)  # a replacement was created

        await client.patch(PODS, leaving, {"metadata": {"labels": {"app": "owner"}}}, namespace=ns)

        async def adopted_or_deleted() -> bool:
            try:
                pod = await client.get(PODS, leaving, namespace=ns)
            except NotFound:
                return True  # adopted, then chosen as the extra pod
            refs = pod["metadata"].get("ownerReferences") or []
            return any(ref["uid"] == rs["metadata"]["uid"] for ref in refs)

        await poll(adopted_or_deleted, within=WITHIN, message="the pod was never adopted back")
        await wait_ready(client, ns, "owner", 2)  # and one of three was removed


def _when(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_min_ready_seconds_holds_availability_back(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with running_manager(cluster, SPEC):
        await client.create(
            REPLICASETS, replicaset("patient", 2, min_ready_seconds=5), namespace=ns
        )

        async def all_available() -> bool:
            rs = await client.get(REPLICASETS, "patient", namespace=ns)
            return (rs.get("status") or {}).get("availableReplicas", 0) == 2

        await poll(all_available, within=WITHIN, message="pods never counted available")
        now = datetime.datetime.now(datetime.UTC)
        for pod in active(await pods_of(client, ns, "app=patient")):
            ready = condition(pod, "Ready")
            assert ready is not None and ready["status"] == "True"
            # Ready times have one-second resolution: 5 s shows as at least 4.
            waited = (now - _when(ready["lastTransitionTime"])).total_seconds()
            assert waited >= 4, f"{pod['metadata']['name']} counted available after {waited} s"


@pytest.mark.slow
async def test_fifty_replicasets_of_ten_converge(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    if len((await client.list(Resource("", "v1", "nodes", "Node", namespaced=False)))["items"]) < 6:
        await cluster.create_nodes(3)  # 110 pods per node: 500 pods need more than three
    names = [f"fleet-{i}" for i in range(50)]
    async with running_manager(cluster, SPEC):
        for name in names:
            await client.create(REPLICASETS, replicaset(name, 10), namespace=ns)

        async def converged() -> bool:
            listed = await client.list(REPLICASETS, namespace=ns)
            fleet = [rs for rs in listed["items"] if rs["metadata"]["name"] in names]
            return len(fleet) == 50 and all(
                (rs.get("status") or {}).get("readyReplicas") == 10 for rs in fleet
            )

        await poll(converged, within=300, interval=1.0, message="50 x 10 did not converge")
        pods = active(await pods_of(client, ns, "app"))
        assert len(pods) == 500


async def test_takes_over_a_replicaset_from_kcm_without_replacing_a_pod(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await cluster.set_controller_manager_controllers(ALL_CONTROLLERS)
    try:
        await client.create(REPLICASETS, replicaset("handover", 2), namespace=ns)
        await wait_ready(client, ns, "handover", 2)
        await scale(client, ns, "handover", 3)
        await wait_ready(client, ns, "handover", 3)
    finally:
        await cluster.set_controller_manager_controllers(WITHOUT_WORKLOAD_CONTROLLERS)
    before = uids(active(await pods_of(client, ns, "app=handover")))
    rs_before = await client.get(REPLICASETS, "handover", namespace=ns)

    async with running_manager(cluster, SPEC):
        # A label change on the RS bumps nothing in the spec but makes kcontrol sync it.
        await client.patch(
            REPLICASETS, "handover", {"metadata": {"labels": {"touched": "yes"}}}, namespace=ns
        )
        await asyncio.sleep(3)  # long enough for a wrong controller to replace pods
        await wait_ready(client, ns, "handover", 3)
        assert uids(active(await pods_of(client, ns, "app=handover"))) == before
        await scale(client, ns, "handover", 4)
        await wait_ready(client, ns, "handover", 4)
        after = uids(active(await pods_of(client, ns, "app=handover")))
        assert before < after and len(after - before) == 1
    rs_after = await client.get(REPLICASETS, "handover", namespace=ns)
    assert rs_after["metadata"]["uid"] == rs_before["metadata"]["uid"]
