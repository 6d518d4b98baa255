"""Shared fixtures of the ReplicaSet controller tests, after upstream's replica_set_test.go:
``new_replica_set``/``new_pod`` build objects, :class:`Fixture` builds the controller against a
:class:`~kcontrol.testing.FakeClient` and informers whose caches the test fills by hand."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import PODS, REPLICASETS, Object
from kcontrol.clock import FakeClock
from kcontrol.controller import ConsistencyStore
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.replicaset import ReplicaSetController

NS = "default"
LABELS = {"foo": "bar"}
TEMPLATE_LABELS = {"foo": "bar", "type": "production"}
RS_UID = "rs-uid"
OWNER_UID = "deployment-uid"
WALL = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(seconds: float) -> str:
    return ts(WALL - timedelta(seconds=seconds))


def new_replica_set(
    replicas: int = 1,
    selector: dict[str, str] | None = None,
    *,
    name: str = "foobar",
    uid: str = RS_UID,
    owner_uid: str | None = OWNER_UID,
    min_ready_seconds: int = 0,
    template_labels: dict[str, str] | None = None,
    **metadata: Any,
) -> Object:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, **metadata}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "owner",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(selector if selector is not None else LABELS)},
        "template": {
            "metadata": {
                "labels": dict(template_labels if template_labels is not None else TEMPLATE_LABELS),
                "annotations": {"note": "from-template"},
            },
            "spec": {
                "containers": [{"name": "app", "image": "foo/bar"}],
                "nodeSelector": {"baz": "blah"},
            },
        },
    }
    if min_ready_seconds:
        spec["minReadySeconds"] = min_ready_seconds
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": spec}


def controller_ref(rs: Object) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs["metadata"]["name"],
        "uid": rs["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_pod(
    name: str,
    rs: Object | None = None,
    phase: str = "Running",
    *,
    ready: bool | None = None,
    ready_since: str | None = None,
    owned: bool = True,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    resource_version: str | None = None,
    **metadata: Any,
) -> Object:
    """A pod of ``rs`` (its selector's labels, its controller reference unless ``owned`` is
    false); ready when running unless ``ready`` says otherwise."""
    rs = rs if rs is not None else new_replica_set()
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "labels": dict(labels if labels is not None else rs["spec"]["selector"]["matchLabels"]),
        **metadata,
    }
    if owned:
        meta["ownerReferences"] = [controller_ref(rs)]
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    status: dict[str, Any] = {"phase": phase}
    if ready if ready is not None else phase == "Running":
        condition: dict[str, Any] = {"type": "Ready", "status": "True"}
        if ready_since is not None:
            condition["lastTransitionTime"] = ready_since
        status["conditions"] = [condition]
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "foo/bar"}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


class Fixture:
    """A ReplicaSet controller on a fake client, fake clock and hand-filled caches.

    ``add_*`` store an object on the fake server *and* in the cache (as the server stored
    it); ``cache_*`` only in the cache, to make the cache disagree with the server.
    """

    def __init__(
        self,
        *,
        burst_replicas: int = 500,
        terminating_replicas: bool = True,
        consistency: ConsistencyStore | None = None,
        events_name_objects: bool = False,
    ) -> None:
        self.clock = FakeClock(wall_start=WALL)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder(include_object=events_name_objects)
        self.registry = CollectorRegistry()
        self.rsc = ReplicaSetController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            burst_replicas=burst_replicas,
            clock=self.clock,
            registry=self.registry,
            terminating_replicas=terminating_replicas,
            consistency=consistency,
        )
        self.rs_informer = self.informers.for_resource(REPLICASETS)
        self.pod_informer = self.informers.for_resource(PODS)

    # -- state ---------------------------------------------------------------------------------

    def add_rs(self, rs: Object) -> Object:
        stored = self.client.tracker.add(rs)
        self.rs_informer.indexer.add(stored)
        return stored

    def cache_rs(self, rs: Object) -> Object:
        cached = copy.deepcopy(rs)
        self.rs_informer.indexer.add(cached)
        return cached

    def add_pod(self, pod: Object) -> Object:
        stored = self.client.tracker.add(pod)
        self.pod_informer.indexer.add(stored)
        return stored

    def cache_pod(self, pod: Object) -> Object:
        cached = copy.deepcopy(pod)
        self.pod_informer.indexer.add(cached)
        return cached

    def server_rs(self, name: str = "foobar") -> Object:
        return self.client.tracker.get(REPLICASETS, name, namespace=NS)

    def refresh_rs_cache(self, name: str = "foobar") -> Object:
        """Put the server's current ReplicaSet in the cache (what the watch would do)."""
        stored = self.server_rs(name)
        self.rs_informer.indexer.update(stored)
        return stored

    def observe_new_pods(self) -> list[Object]:
        """Deliver the server's pods missing from the cache to the cache and to the add
        handler, as the watch would; returns them."""
        cached = {p["metadata"]["name"] for p in self.pod_informer.indexer.list()}
        new = [
            pod
            for pod in self.client.tracker.list(PODS, namespace=NS)["items"]
            if pod["metadata"]["name"] not in cached
        ]
        for pod in new:
            self.pod_informer.indexer.add(pod)
            self.rsc.add_pod(pod)
        return new

    # -- what the controller did -------------------------------------------------------------

    def writes(self) -> list[Action]:
        return [a for a in self.client.actions if a.verb not in ("get", "list", "watch")]

    def pod_creates(self) -> list[Action]:
        return self.client.actions_for("create", PODS)

    def pod_deletes(self) -> list[str]:
        return sorted(a.name for a in self.client.actions_for("delete", PODS))

    def pod_patches(self) -> list[Action]:
        return self.client.actions_for("patch", PODS)

    def status_updates(self) -> list[Action]:
        return self.client.actions_for("update", REPLICASETS, subresource="status")

    def last_status(self) -> dict[str, Any]:
        (*_, update) = self.status_updates()
        assert update.object is not None
        status: dict[str, Any] = update.object["status"]
        return status

    async def drain_queue(self) -> list[str]:
        """Every key queued now (not the delayed ones), in order; each marked done."""
        queue = self.rsc.controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys


def rs_key(rs: Object) -> str:
    return f"{rs['metadata']['namespace']}/{rs['metadata']['name']}"
