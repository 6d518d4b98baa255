"""Builders and the sync fixture of the Deployment controller's unit tests (upstream's
``newDeployment`` / ``newReplicaSet`` / ``newFixture``).

Objects are dicts shaped as the API server sends them. The :class:`Fixture` seeds a
:class:`~kcontrol.testing.FakeClient` (the "server") and the informers' caches (what the
controller reads), runs one sync, and exposes the actions the controller sent.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import DEPLOYMENTS, PODS, REPLICASETS, Object, Resource
from kcontrol.clock import FakeClock
from kcontrol.controller import ConsistencyStore, Result
from kcontrol.informers import Lister, SharedInformerFactory
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.deployment import DeploymentController
from kcontrol_controllers.deployment._writes import SyncContext

NAMESPACE = "default"
WALL_START = datetime(2026, 1, 1, tzinfo=UTC)
NOW = "2026-01-01T00:00:00Z"

_seconds = itertools.count()


def timestamp(second: int) -> str:
    """An RFC 3339 creation time ``second`` seconds after 2025-12-31T23:00:00Z."""
    base = datetime(2025, 12, 31, 23, 0, 0, tzinfo=UTC).timestamp() + second
    return datetime.fromtimestamp(base, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_deployment(
    name: str,
    replicas: int,
    *,
    revision_history_limit: int | None = None,
    max_surge: int | str | None = 0,
    max_unavailable: int | str | None = 0,
    selector: Mapping[str, str] | None = None,
    strategy: str = "RollingUpdate",
    progress_deadline_seconds: int | None = None,
) -> Object:
    """A Deployment like upstream's ``newDeployment`` (RollingUpdate 0/0 by default)."""
    labels = dict(selector if selector is not None else {"foo": "bar"})
    strategy_body: dict[str, Any] = {"type": strategy}
    if strategy == "RollingUpdate":
        rolling: dict[str, Any] = {}
        if max_surge is not None:
            rolling["maxSurge"] = max_surge
        if max_unavailable is not None:
            rolling["maxUnavailable"] = max_unavailable
        strategy_body["rollingUpdate"] = rolling
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(labels)},
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "foo", "image": "foo/bar"}]},
        },
        "strategy": strategy_body,
    }
    if revision_history_limit is not None:
        spec["revisionHistoryLimit"] = revision_history_limit
    if progress_deadline_seconds is not None:
        spec["progressDeadlineSeconds"] = progress_deadline_seconds
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "annotations": {},
            "creationTimestamp": timestamp(0),
        },
        "spec": spec,
        "status": {},
    }


def controller_ref(deployment: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
        "uid": deployment["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_replica_set(
    deployment: Mapping[str, Any],
    name: str,
    replicas: int,
    *,
    created: int | None = None,
    revision: int | None = None,
    available: int | None = None,
    owned: bool = True,
) -> Object:
    """A ReplicaSet of ``deployment`` with its template (upstream ``newReplicaSet``);
    ``created`` orders creation times (default: later than every earlier call)."""
    spec = deployment["spec"]
    labels = dict(spec["selector"]["matchLabels"])
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": str(uuid.uuid4()),
        "labels": labels,
        "creationTimestamp": timestamp(created if created is not None else next(_seconds) + 1),
        "generation": 1,
    }
    if owned:
        metadata["ownerReferences"] = [controller_ref(deployment)]
    if revision is not None:
        metadata["annotations"] = {"deployment.kubernetes.io/revision": str(revision)}
    rs: Object = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": copy.deepcopy(spec["selector"]),
            "template": copy.deepcopy(spec["template"]),
        },
        "status": {"observedGeneration": 1},
    }
    if available is not None:
        rs["status"].update(
            {"replicas": replicas, "readyReplicas": available, "availableReplicas": available}
        )
    return rs


def pod_of(replica_set: Mapping[str, Any], name: str, phase: str = "Running") -> Object:
    """A pod controlled by ``replica_set`` (upstream ``generatePodFromRS``)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": str(uuid.uuid4()),
            "labels": dict(replica_set["spec"]["selector"]["matchLabels"]),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": replica_set["metadata"]["name"],
                    "uid": replica_set["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": copy.deepcopy(replica_set["spec"]["template"]["spec"]),
        "status": {"phase": phase},
    }


_RESOURCES = {"Deployment": DEPLOYMENTS, "ReplicaSet": REPLICASETS, "Pod": PODS}


def newest_cached_version(informers: SharedInformerFactory, resource: Resource) -> str:
    """How far an informer whose cache a test fills by hand has got: the newest
    resourceVersion in its cache ("" when empty, which holds no sync back) - what a running
    informer's ``last_sync_resource_version`` is at least."""
    versions = [
        int(version)
        for obj in informers.for_resource(resource).indexer.list()
        if (version := str(obj["metadata"].get("resourceVersion") or "")).isdigit()
    ]
    return str(max(versions)) if versions else ""


class Fixture:
    """A controller over a fake server and unstarted informers whose caches tests fill; its
    consistency store sees what the tests put in the caches."""

    def __init__(self) -> None:
        self.clock = FakeClock(wall_start=WALL_START)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.dc = DeploymentController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            clock=self.clock,
            registry=self.registry,
            consistency=ConsistencyStore(
                {
                    resource: partial(newest_cached_version, self.informers, resource)
                    for resource in (DEPLOYMENTS, REPLICASETS)
                }
            ),
        )

    @property
    def ctx(self) -> SyncContext:
        return SyncContext(
            client=self.client,
            recorder=self.recorder,
            rs_lister=self.informers.lister(REPLICASETS),
            clock=self.clock,
        )

    @property
    def dc_ctx(self) -> SyncContext:
        """The controller's own sync context (its consistency store included)."""
        return self.dc._ctx

    def lister(self, resource: Resource) -> Lister:
        return self.informers.lister(resource)

    def seed(self, *objects: Object, server: bool = True, cache: bool = True) -> list[Object]:
        """Store ``objects`` on the fake server and/or in the caches; returns them as stored
        (with resourceVersions; as given when only cached)."""
        stored = []
        for obj in objects:
            resource = _RESOURCES[obj["kind"]]
            copy_ = self.client.tracker.add(obj) if server else copy.deepcopy(obj)
            if cache:
                self.informers.for_resource(resource).indexer.add(copy.deepcopy(copy_))
            stored.append(copy_)
        return stored

    async def sync(self, deployment: Mapping[str, Any]) -> Result | None:
        key = f"{deployment['metadata']['namespace']}/{deployment['metadata']['name']}"
        return await self.dc.sync(key)

    def writes(self) -> list[Action]:
        """The actions that change something (reads left out)."""
        return [a for a in self.client.actions if a.verb not in ("get", "list", "watch")]

    def summary(self) -> list[str]:
        """``verb resource[/subresource]`` of every action, in order."""
        return [
            f"{a.verb} {a.resource.plural}" + (f"/{a.subresource}" if a.subresource else "")
            for a in self.client.actions
        ]

    async def queued(self) -> list[str]:
        """The keys waiting in the controller's queue, in order (the queue is drained)."""
        queue = self.dc.controller.queue
        keys = []
        while len(queue):
            key = await queue.get()
            queue.done(key)
            keys.append(key)
        return keys
