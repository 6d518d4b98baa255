"""kcontrol's replication controller on the test cluster, with kube-controller-manager's own
``replicationcontroller-controller`` switched off: pods that kube-scheduler binds and kwok
makes ready, a ReplicationController scaled up and down, and a deleted pod replaced.

Each test runs the controller in this process through the manager (as kcontrol-manager would,
without leader election) and waits on outcomes with deadline-bounded polls. The RC is deleted
before KCM's controller comes back, so that one never acts on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kcontrol.client import EVENTS, PODS, REPLICATIONCONTROLLERS, ApiClient, ListOptions, Object
from kcontrol.envtest.cluster import Cluster
from kcontrol.errors import NotFound
from kcontrol.manager import Manager
from kcontrol_controllers.replicationcontroller import NAME, SPEC
from tests.controllers.cluster_helpers import (
    WITHIN,
    active,
    is_ready,
    pods_of,
    running_manager,
    uids,
    without_kcm_controllers,
)
from tests.integration.helpers import poll


def replication_controller(name: str, replicas: int) -> Object:
    """An RC whose selector is left out: the API server defaults it from the template's
    labels, as ``kubectl run --generator=run/v1`` relied on."""
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }


@contextlib.asynccontextmanager
async def kcontrol_instead_of_kcm(
    cluster: Cluster, client: ApiClient, namespace: str
) -> AsyncIterator[Manager]:
    async with (
        without_kcm_controllers(cluster, NAME),
        running_manager(cluster, SPEC) as manager,
    ):
        try:
            yield manager
        finally:
            listed = await client.list(REPLICATIONCONTROLLERS, namespace=namespace)
            for rc in listed["items"]:
                with contextlib.suppress(NotFound):
                    await client.delete(
                        REPLICATIONCONTROLLERS, rc["metadata"]["name"], namespace=namespace
                    )


async def scale(client: ApiClient, namespace: str, name: str, replicas: int) -> None:
    await client.patch(
        REPLICATIONCONTROLLERS, name, {"spec": {"replicas": replicas}}, namespace=namespace
    )


async def wait_ready(client: ApiClient, namespace: str, name: str, replicas: int) -> Object:
    """Wait until the RC has exactly ``replicas`` active pods, all ready, and its status says
    so for its current generation; returns the RC."""
    seen: dict[str, Any] = {}

    async def done() -> bool:
        rc = await client.get(REPLICATIONCONTROLLERS, name, namespace=namespace)
        pods = active(await pods_of(client, namespace, f"app={name}"))
        status = rc.get("status") or {}
        seen.update(status=status, pods=len(pods), ready=sum(map(is_ready, pods)))
        return (
            len(pods) == replicas
            and all(map(is_ready, pods))
            and status.get("replicas") == replicas
            and status.get("fullyLabeledReplicas") == replicas
            and status.get("readyReplicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas
            and status.get("observedGeneration") == rc["metadata"]["generation"]
        )

    await poll(done, within=WITHIN, message=lambda: f"{name} not ready at {replicas}: {seen}")
    return await client.get(REPLICATIONCONTROLLERS, name, namespace=namespace)


def syncs(manager: Manager) -> float:
    """The RC syncs the manager's controller finished (queue ``replicationmanager``)."""
    return sum(
        manager.registry.get_sample_value(
            "controller_runtime_reconcile_total",
            {"controller": "replicationmanager", "result": result},
        )
        or 0.0
        for result in ("success", "error", "requeue", "requeue_after")
    )


def creators(pods: list[Object]) -> set[str]:
    """The field managers that created ``pods`` (their first managedFields entry)."""
    return {pod["metadata"]["managedFields"][0]["manager"] for pod in pods}


async def events_of(client: ApiClient, namespace: str, name: str) -> list[Object]:
    listed = await client.list(
        EVENTS,
        namespace=namespace,
        options=ListOptions(field_selector=f"involvedObject.name={name}"),
    )
    items: list[Object] = listed["items"]
    return items


async def test_scales_an_rc_up_and_down_through_ready_pods(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with kcontrol_instead_of_kcm(cluster, client, ns) as manager:
        created = await client.create(
            REPLICATIONCONTROLLERS, replication_controller("web", 3), namespace=ns
        )
        assert created["spec"]["selector"] == {"app": "web"}, "defaulted by the API server"
        rc = await wait_ready(client, ns, "web", 3)
        for pod in active(await pods_of(client, ns, "app=web")):
            assert pod["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "v1",
                    "kind": "ReplicationController",
                    "name": "web",
                    "uid": rc["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            assert pod["metadata"]["generateName"] == "web-"
        assert "terminatingReplicas" not in rc["status"]

        await scale(client, ns, "web", 5)
        await wait_ready(client, ns, "web", 5)
        await scale(client, ns, "web", 1)
        await wait_ready(client, ns, "web", 1)

        events = await events_of(client, ns, "web")
        reasons = [event.get("reason") for event in events]
        assert reasons.count("SuccessfulCreate") >= 5, reasons
        assert "SuccessfulDelete" in reasons, reasons
        for event in events:
            assert event["involvedObject"]["kind"] == "ReplicationController"
            assert event["source"]["component"] == "replication-controller"
        # kcontrol did it: KCM's controller is off.
        assert syncs(manager) > 0
        assert "kube-controller-manager" not in creators(await pods_of(client, ns, "app=web"))


async def test_a_deleted_pod_is_replaced(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    async with kcontrol_instead_of_kcm(cluster, client, ns):
        await client.create(REPLICATIONCONTROLLERS, replication_controller("db", 3), namespace=ns)
        await wait_ready(client, ns, "db", 3)
        before = uids(active(await pods_of(client, ns, "app=db")))
        victim = sorted(
            active(await pods_of(client, ns, "app=db")), key=lambda p: p["metadata"]["name"]
        )[0]
        await client.delete(PODS, victim["metadata"]["name"], namespace=ns)

        async def replaced() -> bool:
            now = uids(active(await pods_of(client, ns, "app=db")))
            return len(now) == 3 and victim["metadata"]["uid"] not in now

        await poll(replaced, within=WITHIN, message="the deleted pod was not replaced")
        await wait_ready(client, ns, "db", 3)
        after = uids(active(await pods_of(client, ns, "app=db")))
        assert len(after - before) == 1 and before - after == {victim["metadata"]["uid"]}
        assert "kube-controller-manager" not in creators(await pods_of(client, ns, "app=db"))
