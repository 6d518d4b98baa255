"""Objects for the DaemonSet tests, shaped as upstream daemon_controller_test.go builds them
(``newDaemonSet``, ``newNode``, ``newPod``, the update strategies), as API dicts."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import CONTROLLERREVISIONS, DAEMONSETS, NODES, PODS
from kcontrol.clock import FakeClock
from kcontrol.controller import ConsistencyStore, Result
from kcontrol.informers import SharedInformerFactory
from kcontrol.metatime import format_time
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.daemonset import DaemonSetsController

SIMPLE_DAEMON_SET_LABEL = {"name": "simple-daemon", "type": "production"}
SIMPLE_DAEMON_SET_LABEL2 = {"name": "simple-daemon", "type": "test"}

NO_SCHEDULE_TOLERATIONS = [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]
NO_SCHEDULE_TAINTS = [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]
NO_EXECUTE_TAINTS = [{"key": "dedicated", "value": "user1", "effect": "NoExecute"}]

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


def on_delete() -> dict[str, Any]:
    return {"type": "OnDelete"}


def rolling_update(max_unavailable: int | str = 1) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}


def surge(max_surge: int | str) -> dict[str, Any]:
    """upstream ``newUpdateSurge``: unavailability 0, the given surge."""
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": max_surge}}


def update_strategies() -> list[dict[str, Any]]:
    return [on_delete(), rolling_update()]


def new_daemon_set(
    name: str = "foo", strategy: dict[str, Any] | None = None, **template_spec: Any
) -> dict[str, Any]:
    """A DaemonSet in ``default`` selecting :data:`SIMPLE_DAEMON_SET_LABEL`; ``template_spec``
    is merged into the pod template's spec."""
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "foo/bar"}],
        "dnsPolicy": "Default",
        **template_spec,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "revisionHistoryLimit": 2,
            "updateStrategy": strategy if strategy is not None else on_delete(),
            "selector": {"matchLabels": dict(SIMPLE_DAEMON_SET_LABEL)},
            "template": {"metadata": {"labels": dict(SIMPLE_DAEMON_SET_LABEL)}, "spec": spec},
        },
    }


def new_node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def daemon_pod(
    name: str,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    *,
    created: datetime | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if created is not None:
        metadata["creationTimestamp"] = format_time(created)
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "foo/bar"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def mark_pod_ready(pod: dict[str, Any], since: datetime = NOW) -> dict[str, Any]:
    pod["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": format_time(since)}
        ],
    }
    return pod


# -- the controller on a fake client -----------------------------------------------------------


def ds_key(ds: Mapping[str, Any]) -> str:
    return f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"


def node_of(pod: Mapping[str, Any]) -> str:
    """The node a created daemon pod is pinned to (its node-name affinity)."""
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (term,) = terms["nodeSelectorTerms"]
    (requirement,) = term["matchFields"]
    assert requirement["key"] == "metadata.name"
    (node,) = requirement["values"]
    return str(node)


class Fixture:
    """A DaemonSet controller on a fake client, a fake clock and caches the test fills.

    ``add_*`` store an object on the fake server and in the cache; :meth:`observe` delivers
    the server's current pods, DaemonSets and revisions to the caches and the pod handlers,
    as the watches would.
    """

    def __init__(
        self, *, burst_replicas: int = 250, consistency: ConsistencyStore | None = None
    ) -> None:
        self.clock = FakeClock(wall_start=NOW)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.dsc = DaemonSetsController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            burst_replicas=burst_replicas,
            clock=self.clock,
            registry=self.registry,
            stale_cache_consistency=False,
            consistency=consistency,
        )
        self.ds_informer = self.informers.for_resource(DAEMONSETS)
        self.pod_informer = self.informers.for_resource(PODS)
        self.node_informer = self.informers.for_resource(NODES)
        self.history_informer = self.informers.for_resource(CONTROLLERREVISIONS)

    # -- state ---------------------------------------------------------------------------------

    def _add(self, informer: Any, obj: Mapping[str, Any]) -> dict[str, Any]:
        stored: dict[str, Any] = self.client.tracker.add(obj)
        informer.indexer.add(copy.deepcopy(stored))
        return stored

    def add_ds(self, ds: Mapping[str, Any]) -> dict[str, Any]:
        return self._add(self.ds_informer, ds)

    def add_node(self, node: Mapping[str, Any]) -> dict[str, Any]:
        return self._add(self.node_informer, node)

    def add_nodes(
        self, count: int, labels: dict[str, str] | None = None, prefix: str = "node-"
    ) -> None:
        for i in range(count):
            self.add_node(new_node(f"{prefix}{i}", labels))

    def add_pod(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        return self._add(self.pod_informer, pod)

    def add_revision(self, revision: Mapping[str, Any]) -> dict[str, Any]:
        return self._add(self.history_informer, revision)

    def server_ds(self, name: str = "foo") -> dict[str, Any]:
        ds: dict[str, Any] = self.client.tracker.get(DAEMONSETS, name, namespace="default")
        return ds

    def server_pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.tracker.list(PODS, namespace="default")["items"]
        return items

    def server_revisions(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client.tracker.list(
            CONTROLLERREVISIONS, namespace="default"
        )["items"]
        return items

    def update_server(self, resource: Any, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Write ``obj`` on the server (as another client), without recording an action."""
        stored: dict[str, Any] = self.client.tracker.update(resource, obj)
        return stored

    def observe(self) -> None:
        """Bring the caches in line with the server, calling the pod handlers for pods that
        appeared or went (the expectations count them)."""
        server = {p["metadata"]["name"]: p for p in self.server_pods()}
        cached = {p["metadata"]["name"]: p for p in self.pod_informer.indexer.list()}
        for name, pod in server.items():
            if name not in cached:
                self.pod_informer.indexer.add(copy.deepcopy(pod))
                self.dsc.add_pod(pod)
            elif cached[name]["metadata"].get("resourceVersion") != pod["metadata"].get(
                "resourceVersion"
            ):
                self.pod_informer.indexer.update(copy.deepcopy(pod))
                self.dsc.update_pod(cached[name], pod)
        for name, pod in cached.items():
            if name not in server:
                self.pod_informer.indexer.delete(pod)
                self.dsc.delete_pod(pod)
        for informer, items in (
            (self.ds_informer, self.client.tracker.list(DAEMONSETS, namespace="default")["items"]),
            (self.history_informer, self.server_revisions()),
        ):
            for obj in informer.indexer.list():
                informer.indexer.delete(obj)
            for obj in items:
                informer.indexer.add(copy.deepcopy(obj))

    # -- running -------------------------------------------------------------------------------

    async def sync(self, ds: Mapping[str, Any] | str = "foo") -> Result | None:
        key = ds if isinstance(ds, str) else ds_key(ds)
        return await self.dsc.sync(key if "/" in key else f"default/{key}")

    async def sync_and_observe(self, ds: Mapping[str, Any] | str = "foo") -> Result | None:
        result = await self.sync(ds)
        self.observe()
        return result

    # -- what the controller did ---------------------------------------------------------------

    def created_pods(self) -> list[dict[str, Any]]:
        return [a.object for a in self.client.actions_for("create", PODS) if a.object]

    def created_nodes(self) -> list[str]:
        return sorted(node_of(pod) for pod in self.created_pods())

    def deleted_pods(self) -> list[str]:
        return sorted(a.name for a in self.client.actions_for("delete", PODS))

    def status_updates(self) -> list[dict[str, Any]]:
        return [
            a.object["status"]
            for a in self.client.actions_for("update", DAEMONSETS, subresource="status")
            if a.object
        ]

    def last_status(self) -> dict[str, Any]:
        (*_, status) = self.status_updates()
        return status

    def reset(self) -> None:
        self.client.clear_actions()
        self.recorder.events.clear()

    async def drain_queue(self) -> list[str]:
        queue = self.dsc.controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys
