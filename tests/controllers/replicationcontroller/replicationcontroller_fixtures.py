"""Shared fixtures of the replication controller tests: ``new_rc``/``new_pod`` build objects,
:class:`Fixture` builds the controller against a :class:`~kcontrol.testing.FakeClient` and
informers whose caches the test fills by hand (as the ReplicaSet controller's tests do)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import PODS, REPLICATIONCONTROLLERS, Object
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.replicationcontroller import ReplicationManager

NS = "default"
SELECTOR = {"app": "web"}
TEMPLATE_LABELS = {"app": "web", "tier": "front"}
RC_UID = "rc-uid"
WALL = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
KEY = f"{NS}/web"


def new_rc(
    replicas: int = 1,
    selector: dict[str, str] | None = None,
    *,
    name: str = "web",
    uid: str = RC_UID,
    template_labels: dict[str, str] | None = None,
    **metadata: Any,
) -> Object:
    """A ReplicationController as the API server serves it: ``spec.selector`` a plain map."""
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": NS, "uid": uid, **metadata},
        "spec": {
            "replicas": replicas,
            "selector": dict(selector if selector is not None else SELECTOR),
            "template": {
                "metadata": {
                    "labels": dict(
                        template_labels if template_labels is not None else TEMPLATE_LABELS
                    )
                },
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }


def rc_ref(rc: Object) -> dict[str, Any]:
    """The controller reference upstream's replication manager gives its pods."""
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "name": rc["metadata"]["name"],
        "uid": rc["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_pod(
    name: str,
    owner_ref: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    **metadata: Any,
) -> Object:
    """A running pod with ``labels`` (the template's by default), controlled by
    ``owner_ref`` if given, ready unless ``ready`` is false."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "labels": dict(labels if labels is not None else TEMPLATE_LABELS),
        **metadata,
    }
    if owner_ref is not None:
        meta["ownerReferences"] = [owner_ref]
    status: dict[str, Any] = {"phase": "Running"}
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
        "status": status,
    }


class Fixture:
    """A replication controller on a fake client, fake clock and hand-filled caches;
    ``add_*`` store an object on the fake server and in the cache."""

    def __init__(self) -> None:
        self.clock = FakeClock(wall_start=WALL)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder(include_object=True)
        self.rm = ReplicationManager(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            clock=self.clock,
            registry=CollectorRegistry(),
        )
        self.rc_informer = self.informers.for_resource(REPLICATIONCONTROLLERS)
        self.pod_informer = self.informers.for_resource(PODS)

    def add_rc(self, rc: Object) -> Object:
        stored = self.client.tracker.add(rc)
        self.rc_informer.indexer.add(stored)
        return stored

    def add_pod(self, pod: Object) -> Object:
        stored = self.client.tracker.add(pod)
        self.pod_informer.indexer.add(stored)
        return stored

    def server_rc(self, name: str = "web") -> Object:
        return self.client.tracker.get(REPLICATIONCONTROLLERS, name, namespace=NS)

    def refresh_rc_cache(self, name: str = "web") -> Object:
        stored = self.server_rc(name)
        self.rc_informer.indexer.update(stored)
        return stored

    def observe_new_pods(self) -> list[Object]:
        """Deliver the server's pods missing from the cache to the cache and to the add
        handler, as the watch would."""
        cached = {p["metadata"]["name"] for p in self.pod_informer.indexer.list()}
        new = [
            pod
            for pod in self.client.tracker.list(PODS, namespace=NS)["items"]
            if pod["metadata"]["name"] not in cached
        ]
        for pod in new:
            self.pod_informer.indexer.add(pod)
            self.rm.add_pod(pod)
        return new

    def writes(self) -> list[Action]:
        return [a for a in self.client.actions if a.verb not in ("get", "list", "watch")]

    def pod_creates(self) -> list[Action]:
        return self.client.actions_for("create", PODS)

    def pod_deletes(self) -> list[str]:
        return sorted(a.name for a in self.client.actions_for("delete", PODS))

    def pod_patches(self) -> list[Action]:
        return self.client.actions_for("patch", PODS)

    def status_updates(self) -> list[Action]:
        return self.client.actions_for("update", REPLICATIONCONTROLLERS, subresource="status")

    def last_status(self) -> dict[str, Any]:
        (*_, update) = self.status_updates()
        assert update.object is not None
        status: dict[str, Any] = update.object["status"]
        return status

    async def drain_queue(self) -> list[str]:
        queue = self.rm.controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys
