"""Shared pieces of the pod garbage collector tests, after upstream's gc_controller_test.go:
``new_pod`` and ``new_node`` build the objects, :class:`Fixture` the controller on a fake
client and a fake clock whose wall time starts at :data:`NOW`, with pod and node caches the
test fills by hand (upstream's ``podInformer.Informer().GetStore().Add``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import NODES, PODS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient
from kcontrol_controllers.podgc import PodGCController

NS = "default"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_pod(
    name: str,
    phase: str | None = "Running",
    *,
    node: str = "node",
    hours: int = 1,
    deleting: bool = False,
    reason: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    namespace: str = NS,
) -> Object:
    """A pod bound to ``node`` ("" for none), created ``hours`` hours after the epoch (as
    upstream's tests space them), in ``phase`` (None: no phase), being deleted when
    ``deleting``."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "creationTimestamp": ts(EPOCH + timedelta(hours=hours)),
    }
    if deleting:
        metadata["deletionTimestamp"] = ts(NOW)
        metadata["finalizers"] = ["example.com/hold"]
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if reason is not None:
        status["reason"] = reason
    if conditions is not None:
        status["conditions"] = conditions
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "img"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def new_node(name: str = "node", *, ready: bool = True, taints: list[Any] | None = None) -> Object:
    node: Object = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }
    if taints:
        node["spec"]["taints"] = taints
    return node


class Fixture:
    """The controller on a fake client and a fake clock (wall time :data:`NOW`).

    ``add_pod``/``add_node`` store an object on the fake server and in the cache;
    ``cache_node`` and ``server_node`` in one of the two only, to make them disagree.
    """

    def __init__(self, threshold: int = 0, *, quarantine_time: float = 40.0) -> None:
        self.clock = FakeClock(wall_start=NOW)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.registry = CollectorRegistry()
        self.controller = PodGCController(
            client=self.client,
            informers=self.informers,
            terminated_pod_threshold=threshold,
            quarantine_time=quarantine_time,
            clock=self.clock,
            registry=self.registry,
        )
        self.gc = self.controller.collector
        self.pod_informer = self.informers.for_resource(PODS)
        self.node_informer = self.informers.for_resource(NODES)

    def add_pod(self, pod: Object) -> Object:
        stored: Object = self.client.tracker.add(pod)
        self.pod_informer.indexer.add(stored)
        return stored

    def add_pods(self, *pods: Object) -> None:
        for pod in pods:
            self.add_pod(pod)

    def pods(self) -> list[Object]:
        listed: list[Object] = self.pod_informer.lister().list()
        return listed

    def nodes(self) -> list[Object]:
        listed: list[Object] = self.node_informer.lister().list()
        return listed

    def add_node(self, node: Object) -> Object:
        stored = self.server_node(node)
        self.node_informer.indexer.add(stored)
        return stored

    def cache_node(self, node: Object) -> None:
        self.node_informer.indexer.add(node)

    def server_node(self, node: Object) -> Object:
        stored: Object = self.client.tracker.add(node)
        return stored

    def deleted(self) -> list[str]:
        """The names of the pods deleted, in the order the deletes were sent."""
        return [a.name for a in self.client.actions_for("delete", PODS)]

    def deletes(self) -> list[Action]:
        return self.client.actions_for("delete", PODS)

    def status_patches(self) -> list[Action]:
        return [a for a in self.client.actions_for("patch", PODS) if a.subresource == "status"]

    def node_gets(self) -> list[str]:
        return [a.name for a in self.client.actions_for("get", NODES)]

    def counted(self, reason: str, namespace: str = NS) -> tuple[float, float]:
        """(attempts, errors) of the force-delete metrics for ``reason``."""
        labels = {"namespace": namespace, "reason": reason}
        total = self.registry.get_sample_value("pod_gc_collector_force_delete_pods_total", labels)
        errors = self.registry.get_sample_value(
            "pod_gc_collector_force_delete_pod_errors_total", labels
        )
        return (total or 0.0, errors or 0.0)
