"""The test cluster: kwok nodes become Ready, kube-scheduler binds pods, kwok plays their
lifecycle as their labels ask, kube-controller-manager runs the garbage collector (and the
workload controllers only when asked), and single components stop and start.

Waits are deadline-bounded polls; what is asserted is an outcome or a minimum delay (load can
only make things slower), never that something happened fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kcontrol.client import CONFIGMAPS, PODS, REPLICASETS, ApiClient, Object, Resource
from kcontrol.envtest.cluster import (
    ALL_CONTROLLERS,
    BEHAVIOR_FAIL,
    BEHAVIOR_LABEL,
    BEHAVIOR_NEVER_READY,
    BEHAVIOR_RESTART,
    KUBE_SCHEDULER,
    READY_DELAY_ANNOTATION,
    RESTART_DELAY_ANNOTATION,
    WITHOUT_WORKLOAD_CONTROLLERS,
    Cluster,
)
from kcontrol.envtest.cluster import _cluster as cluster_module
from kcontrol.envtest.cluster._cluster import COMPONENTS
from kcontrol.envtest.cluster._kwok import kwok_config
from kcontrol.errors import NotFound
from tests.integration.helpers import new_client, poll

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
WITHIN = 60.0


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[ApiClient]:
    async with new_client(cluster) as api:
        yield api


def _pod(name: str, labels: dict[str, str] | None = None, **annotations: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
    }


def _condition(pod: Object, kind: str) -> dict[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _ready(pod: Object) -> bool:
    condition = _condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _get(client: ApiClient, name: str, namespace: str) -> Object:
    return await client.get(PODS, name, namespace=namespace)


def test_kwok_config_rejects_a_negative_delay() -> None:
    with pytest.raises(ValueError, match="negative"):
        kwok_config(ready_delay=-1)


def test_kwok_config_holds_node_and_pod_stages_with_the_ready_delay() -> None:
    text = kwok_config(ready_delay=2.5)
    assert '"name": "node-initialize"' in text
    assert '"name": "pod-ready"' in text
    assert '"durationMilliseconds": 2500' in text


def test_kwok_plays_pod_stages_in_parallel() -> None:
    (options, *stages) = (json.loads(doc) for doc in kwok_config(ready_delay=1).split("---"))
    assert options["kind"] == "KwokConfiguration"
    assert options["options"]["podPlayStageParallelism"] == 32
    assert options["options"]["nodeLeaseParallelism"] == 4  # kwok's defaults kept
    assert {stage["kind"] for stage in stages} == {"Stage"}


async def test_nodes_are_ready_and_pods_get_scheduled_then_ready(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    nodes = (await client.list(NODES))["items"]
    ready = [
        node["metadata"]["name"]
        for node in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
    ]
    assert len(ready) >= 3, f"ready nodes: {ready}"

    await client.create(PODS, _pod("plain"), namespace=cluster_namespace)

    async def ready_now() -> bool:
        pod = await _get(client, "plain", cluster_namespace)
        return _ready(pod) and pod["status"]["phase"] == "Running"

    await poll(ready_now, within=WITHIN, message="pod never became Running and Ready")
    pod = await _get(client, "plain", cluster_namespace)
    assert pod["spec"]["nodeName"] in ready  # bound by the scheduler
    assert pod["status"]["podIP"]


async def test_ready_delay_annotation_holds_the_pod_unready_at_least_that_long(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    await client.create(
        PODS, _pod("slow", **{READY_DELAY_ANNOTATION: "4s"}), namespace=cluster_namespace
    )

    async def ready_now() -> bool:
        return _ready(await _get(client, "slow", cluster_namespace))

    await poll(ready_now, within=WITHIN, message="slow pod never became Ready")
    pod = await _get(client, "slow", cluster_namespace)
    started = _time(pod["status"]["startTime"])
    became_ready = _time(_condition(pod, "Ready")["lastTransitionTime"])  # type: ignore[index]
    # Timestamps have one-second resolution: 4 s of delay shows as at least 3.
    assert (became_ready - started).total_seconds() >= 3


async def test_behaviours_never_ready_fail_and_restart(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    ns = cluster_namespace
    await client.create(PODS, _pod("never", {BEHAVIOR_LABEL: BEHAVIOR_NEVER_READY}), namespace=ns)
    await client.create(PODS, _pod("fails", {BEHAVIOR_LABEL: BEHAVIOR_FAIL}), namespace=ns)
    await client.create(
        PODS,
        _pod("loops", {BEHAVIOR_LABEL: BEHAVIOR_RESTART}, **{RESTART_DELAY_ANNOTATION: "1s"}),
        namespace=ns,
    )

    async def failed() -> bool:
        return (await _get(client, "fails", ns)).get("status", {}).get("phase") == "Failed"

    async def restarted_twice() -> bool:
        statuses = (await _get(client, "loops", ns)).get("status", {}).get("containerStatuses")
        return bool(statuses) and statuses[0].get("restartCount", 0) >= 2

    await poll(failed, within=WITHIN, message="the fail pod never reached phase Failed")
    await poll(restarted_twice, within=WITHIN, message="the restart pod never restarted twice")
    never = await _get(client, "never", ns)
    assert never["status"]["phase"] == "Running"
    assert not _ready(never)
    assert never["status"]["containerStatuses"][0]["ready"] is False


async def test_stopped_scheduler_leaves_pods_unbound_until_it_starts_again(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    await cluster.stop_component(KUBE_SCHEDULER)
    try:
        assert not cluster.component_running(KUBE_SCHEDULER)
        await client.create(PODS, _pod("waits"), namespace=cluster_namespace)
        await asyncio.sleep(3)  # a running scheduler binds a pod well within this
        pod = await _get(client, "waits", cluster_namespace)
        assert not pod["spec"].get("nodeName")
    finally:
        await cluster.start_component(KUBE_SCHEDULER)

    async def bound_and_ready() -> bool:
        pod = await _get(client, "waits", cluster_namespace)
        return bool(pod["spec"].get("nodeName")) and _ready(pod)

    await poll(bound_and_ready, within=WITHIN, message="pod not scheduled after the restart")


async def test_garbage_collector_deletes_dependents_of_a_deleted_owner(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    owner = await client.create(
        CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}},
        namespace=cluster_namespace,
    )
    dependent = _pod("dependent")
    dependent["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
        }
    ]
    await client.create(PODS, dependent, namespace=cluster_namespace)
    await client.delete(CONFIGMAPS, "owner", namespace=cluster_namespace)

    async def gone() -> bool:
        try:
            await _get(client, "dependent", cluster_namespace)
        except NotFound:
            return True
        return False

    await poll(gone, within=WITHIN, message="the garbage collector left the dependent pod")


def _replicaset(name: str, replicas: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }


@contextlib.asynccontextmanager
async def _controllers(cluster: Cluster, controllers: tuple[str, ...]) -> AsyncIterator[None]:
    await cluster.set_controller_manager_controllers(controllers)
    try:
        yield
    finally:
        await cluster.set_controller_manager_controllers(WITHOUT_WORKLOAD_CONTROLLERS)


async def test_replicaset_controller_runs_only_in_the_all_controllers_variant(
    cluster: Cluster, cluster_namespace: str, client: ApiClient
) -> None:
    assert cluster.controllers == WITHOUT_WORKLOAD_CONTROLLERS
    await client.create(REPLICASETS, _replicaset("web", 2), namespace=cluster_namespace)

    async def pods() -> list[Object]:
        items: list[Object] = (await client.list(PODS, namespace=cluster_namespace))["items"]
        return items

    # The garbage collector is proof that KCM is up and watching; it has no RS controller.
    await test_garbage_collector_deletes_dependents_of_a_deleted_owner(
        cluster, cluster_namespace, client
    )
    assert [p for p in await pods() if p["metadata"]["name"].startswith("web-")] == []

    async with _controllers(cluster, ALL_CONTROLLERS):

        async def two_ready() -> bool:
            return sum(1 for pod in await pods() if _ready(pod)) == 2

        await poll(two_ready, within=WITHIN, message="KCM's replicaset controller made no pods")
    assert cluster.controllers == WITHOUT_WORKLOAD_CONTROLLERS


async def test_component_ports_taken_before_the_bind_are_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kube-scheduler, kube-controller-manager and kwok get ports from the ephemeral range,
    which any connection on the machine may take between the pick and the bind: each is
    started again on another port, as etcd and kube-apiserver are."""
    taken = []
    for _ in COMPONENTS:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken.append(sock)
    ports = [sock.getsockname()[1] for sock in taken]
    real = cluster_module.free_port
    picks = iter(ports)  # the first pick of every component: a port someone holds
    monkeypatch.setattr(cluster_module, "free_port", lambda: next(picks, None) or real())
    try:
        async with Cluster(nodes=1, start_timeout=120) as cluster:
            for name, port in zip(COMPONENTS, ports, strict=True):
                assert cluster._ports[name] != port, name
                assert b"address already in use" in cluster.component_log(name).read_bytes(), name
                assert cluster.component_running(name), name
    finally:
        for sock in taken:
            sock.close()
