"""kcontrol's pod garbage collector on the test cluster: a pod bound to a node that is then
deleted is marked Failed with the DisruptionTarget condition and force-deleted, not before
its quarantine is over; terminated pods beyond ``--terminated-pod-gc-threshold`` are deleted
oldest first.

kube-controller-manager's own pod-garbage-collector-controller is switched off for the test
(and put back after), so only kcontrol's deletes pods. The manager watches the test's
namespace only, so the threshold counts the test's pods and nobody else's. The controller is
built with upstream's periods shortened (a collection every second, a 3 s quarantine), as
upstream's ``NewPodGCInternal`` does for its integration tests: neither has a flag.

The pods are bound by ``spec.nodeName`` to a Node the test creates without kwok's
annotation: no scheduler binds them and no kwok stage moves their phase; the test writes
their phase through the status subresource, as a kubelet would.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest

from kcontrol.client import NODES, PODS, ApiClient, Object
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from kcontrol.manager import ControllerContext, ControllerSpec
from kcontrol_controllers.podgc import NAME, TERMINATED_POD_GC_THRESHOLD, PodGCController
from tests.controllers.cluster_helpers import (
    WITHIN,
    running_manager,
    running_managers,
    without_kcm_controllers,
)
from tests.integration.helpers import poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PERIOD = 1.0
QUARANTINE = 3.0
THRESHOLD = 2
HOLD = "kcontrol.io/podgc-test"
"""A finalizer that keeps the orphan visible after its deletion, to read its status."""


def fast_podgc(ctx: ControllerContext) -> PodGCController:
    """The factory with upstream's periods shortened (module docstring)."""
    return PodGCController(
        client=ctx.client,
        informers=ctx.informers,
        terminated_pod_threshold=ctx.flag(TERMINATED_POD_GC_THRESHOLD.name),
        gc_check_period=PERIOD,
        quarantine_time=QUARANTINE,
        registry=ctx.registry,
    )


SPEC = ControllerSpec(
    NAME, fast_podgc, enabled_by_default=False, flags=(TERMINATED_POD_GC_THRESHOLD,)
)


def node(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def pod(name: str, node_name: str, **metadata: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **metadata},
        "spec": {
            "nodeName": node_name,
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": "registry.example/work:1"}],
        },
    }


async def exists(client: ApiClient, name: str, ns: str) -> bool:
    try:
        await client.get(PODS, name, namespace=ns)
    except NotFound:
        return False
    return True


async def test_orphans_after_the_quarantine_then_terminated_pods_oldest_first(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    node_name = f"podgc-{ns}"
    await client.create(NODES, node(node_name))
    try:
        async with (
            without_kcm_controllers(cluster, NAME),
            running_manager(
                cluster,
                SPEC,
                shards=1,  # one namespace: sharded replicas cannot be limited to it
                namespace=ns,
                controller_flags={TERMINATED_POD_GC_THRESHOLD.name: THRESHOLD},
            ),
        ):
            # -- orphaned: the node goes, its pod follows after the quarantine ----------------
            await client.create(PODS, pod("orphan", node_name, finalizers=[HOLD]), namespace=ns)
            await asyncio.sleep(3 * PERIOD)
            current = await client.get(PODS, "orphan", namespace=ns)
            assert not current["metadata"].get("deletionTimestamp"), "its node exists"

            await client.delete(NODES, node_name)
            node_deleted_at = time.monotonic()
            seen: dict[str, Any] = {}

            async def orphan_deleted() -> bool:
                seen["pod"] = await client.get(PODS, "orphan", namespace=ns)
                return bool(seen["pod"]["metadata"].get("deletionTimestamp"))

            await poll(
                orphan_deleted, within=WITHIN, interval=0.2, message="the orphan was not deleted"
            )
            assert time.monotonic() - node_deleted_at >= QUARANTINE, "deleted in quarantine"
            status = seen["pod"]["status"]
            assert status["phase"] == "Failed"
            (target,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
            assert (target["status"], target["reason"], target["message"]) == (
                "True",
                "DeletionByPodGC",
                "PodGC: node no longer exists",
            )
            assert seen["pod"]["metadata"].get("deletionGracePeriodSeconds") == 0
            await client.patch(PODS, "orphan", {"metadata": {"finalizers": None}}, namespace=ns)
            await poll(
                lambda: _gone(client, "orphan", ns),
                within=WITHIN,
                interval=0.2,
                message="the orphan stayed after its finalizer went",
            )

            # -- terminated: four, threshold 2: the two oldest go, whatever their names --------
            await client.create(NODES, node(node_name))
            names = ["t-4", "t-3", "t-2", "t-1"]  # t-4 is the oldest
            for index, name in enumerate(names):
                if index:
                    await asyncio.sleep(1.1)  # creationTimestamp has whole seconds
                await client.create(PODS, pod(name, node_name), namespace=ns)
            for name in names:
                await client.patch(
                    PODS,
                    name,
                    {"status": {"phase": "Succeeded"}},
                    namespace=ns,
                    subresource="status",
                )

            async def the_two_oldest_gone() -> bool:
                return [n for n in names if await exists(client, n, ns)] == ["t-2", "t-1"]

            await poll(
                the_two_oldest_gone,
                within=WITHIN,
                interval=0.2,
                message="the two oldest terminated pods were not deleted",
            )
            await asyncio.sleep(3 * PERIOD)
            assert [n for n in names if await exists(client, n, ns)] == ["t-2", "t-1"], (
                "the threshold's worth stays"
            )
    finally:
        with contextlib.suppress(NotFound):
            await client.delete(NODES, node_name)


async def test_sharded_replicas_each_collect_the_pods_of_their_shards(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    """Three replicas of ``--shards=3``: the orphan in the test's namespace is collected by
    the replica holding that namespace's shard - whichever it is, not only the holder of the
    cluster-scoped shard - and by no other (the others neither cache nor may write it). The
    terminated-pod pass is off (threshold 0): the managers watch the whole cluster."""
    ns = cluster_namespace
    node_name = f"podgc-{ns}"
    await client.create(NODES, node(node_name))
    try:
        async with (
            without_kcm_controllers(cluster, NAME),
            running_managers(
                cluster, SPEC, shards=3, controller_flags={TERMINATED_POD_GC_THRESHOLD.name: 0}
            ) as managers,
        ):
            await client.create(PODS, pod("orphan", node_name), namespace=ns)
            await asyncio.sleep(3 * PERIOD)
            await client.delete(NODES, node_name)
            await poll(
                lambda: _gone(client, "orphan", ns),
                within=WITHIN,
                interval=0.2,
                message="the orphan was not deleted",
            )
            labels = {"namespace": ns, "reason": "orphaned"}
            counts = [
                m.registry.get_sample_value("pod_gc_collector_force_delete_pods_total", labels)
                for m in managers
            ]
            assert sorted(c or 0 for c in counts)[:2] == [0, 0], counts
    finally:
        with contextlib.suppress(NotFound):
            await client.delete(NODES, node_name)


async def _gone(client: ApiClient, name: str, ns: str) -> bool:
    return not await exists(client, name, ns)
