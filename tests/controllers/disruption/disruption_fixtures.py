"""Shared pieces of the disruption controller tests, after upstream's disruption_test.go:
``new_pdb``, ``new_pod`` and the workload builders make the objects, :class:`Fixture` the
controller on a fake client and a fake clock whose wall time starts at :data:`NOW`. Pods
and workloads live in the caches only (upstream's ``add(t, dc.podStore, pod)``); a PDB is
also stored on the fake server, whose status the syncs write, and :meth:`Fixture.sync`
copies the written PDB back into the cache as the informer would."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    STATEFULSETS,
    Object,
    Resource,
)
from kcontrol.clock import FakeClock
from kcontrol.controller import Result
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.disruption import DisruptionController
from kcontrol_controllers.disruption._finders import Finder

NS = "default"
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
FOO_BAR = {"foo": "bar"}


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_pdb(
    *,
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    selector: dict[str, Any] | None = None,
    name: str = "foobar",
) -> Object:
    """A PDB selecting ``foo=bar`` unless ``selector`` is given (``{}``: every pod)."""
    spec: dict[str, Any] = {"selector": {"matchLabels": FOO_BAR} if selector is None else selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1},
        "spec": spec,
    }


def new_pod(
    name: str,
    *,
    ready: bool = True,
    labels: dict[str, str] | None = None,
    owner: Object | None = None,
    deleting: bool = False,
) -> Object:
    """A pod labelled ``foo=bar`` (or ``labels``), Ready unless ``ready`` is False,
    controlled by ``owner`` if given."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "labels": dict(FOO_BAR if labels is None else labels),
    }
    if owner is not None:
        metadata["ownerReferences"] = [controller_ref(owner)]
    if deleting:
        metadata["deletionTimestamp"] = ts(NOW)
    conditions = [{"type": "Ready", "status": "True"}] if ready else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "img"}]},
        "status": {"conditions": conditions},
    }


def controller_ref(owner: Object) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def _workload(api_version: str, kind: str, name: str, replicas: int) -> Object:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{kind}-{name}"},
        "spec": {"replicas": replicas},
    }


def new_rc(replicas: int, name: str = "foobar") -> Object:
    return _workload("v1", "ReplicationController", name, replicas)


def new_rs(replicas: int, name: str = "foobar", *, owner: Object | None = None) -> Object:
    rs = _workload("apps/v1", "ReplicaSet", name, replicas)
    if owner is not None:
        rs["metadata"]["ownerReferences"] = [controller_ref(owner)]
    return rs


def new_deployment(replicas: int, name: str = "foobar") -> Object:
    return _workload("apps/v1", "Deployment", name, replicas)


def new_sts(replicas: int, name: str = "foobar") -> Object:
    return _workload("apps/v1", "StatefulSet", name, replicas)


_RESOURCES = {
    "Pod": PODS,
    "PodDisruptionBudget": PODDISRUPTIONBUDGETS,
    "ReplicationController": REPLICATIONCONTROLLERS,
    "ReplicaSet": REPLICASETS,
    "Deployment": DEPLOYMENTS,
    "StatefulSet": STATEFULSETS,
}


class Fixture:
    """The controller on a fake client, recorder and clock (wall time :data:`NOW`)."""

    def __init__(self, *, scale_finder: Finder | None = None, stale_timeout: float = 120.0) -> None:
        self.clock = FakeClock(wall_start=NOW)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.controller = DisruptionController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            scale_finder=scale_finder,
            stale_pod_disruption_timeout=stale_timeout,
            clock=self.clock,
            registry=CollectorRegistry(),
        )

    def _resource(self, obj: Object) -> Resource:
        return _RESOURCES[obj["kind"]]

    def cache(self, obj: Object) -> Object:
        """Put ``obj`` in its informer's cache (replacing one of its name)."""
        self.informers.for_resource(self._resource(obj)).indexer.update(obj)
        return obj

    def add_pdb(self, pdb: Object) -> str:
        """Store ``pdb`` on the server and in the cache; its key."""
        stored = self.client.tracker.add(pdb)
        self.cache(stored)
        return f"{NS}/{pdb['metadata']['name']}"

    def add_pod(self, pod: Object) -> Object:
        """Store ``pod`` on the server and in the cache (for the stale-condition writes)."""
        stored: Object = self.client.tracker.add(pod)
        return self.cache(stored)

    async def sync(self, key: str = f"{NS}/foobar") -> Result | None:
        """Sync ``key``, then let the cache see the PDB as the server holds it."""
        result: Result | None = await self.controller.sync(key)
        namespace, name = key.split("/")
        for pdb in self.client.tracker.objects(PODDISRUPTIONBUDGETS, namespace):
            if pdb["metadata"]["name"] == name:
                self.cache(pdb)
        return result

    def pdb(self, name: str = "foobar") -> Object:
        stored: Object = self.client.tracker.get(PODDISRUPTIONBUDGETS, name, namespace=NS)
        return stored

    def status(self, name: str = "foobar") -> tuple[int, int, int, int]:
        """``(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)``."""
        status = self.pdb(name).get("status") or {}
        return (
            status.get("disruptionsAllowed", 0),
            status.get("currentHealthy", 0),
            status.get("desiredHealthy", 0),
            status.get("expectedPods", 0),
        )

    def verify(
        self,
        allowed: int,
        current: int,
        desired: int,
        expected: int,
        disrupted: dict[str, str] | None = None,
        name: str = "foobar",
    ) -> None:
        """upstream's ``VerifyPdbStatus``: the numbers, ``disruptedPods``,
        ``observedGeneration`` and the ``DisruptionAllowed`` condition's status and reason."""
        pdb = self.pdb(name)
        status = pdb.get("status") or {}
        assert self.status(name) == (allowed, current, desired, expected)
        assert (status.get("disruptedPods") or {}) == (disrupted or {})
        assert status.get("observedGeneration", 0) == pdb["metadata"].get("generation", 0)
        condition = allowed_condition(pdb)
        assert condition is not None
        if allowed > 0:
            assert (condition["status"], condition["reason"]) == ("True", "SufficientPods")
        else:
            assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")

    def events(self, reason: str) -> list[str]:
        return [e for e in self.recorder.events if e.split(" ", 2)[1] == reason]


def allowed_condition(pdb: Object) -> dict[str, Any] | None:
    for condition in (pdb.get("status") or {}).get("conditions") or ():
        if condition["type"] == "DisruptionAllowed":
            return dict(condition)
    return None


async def drain(queue: Any) -> list[str]:
    """Every key queued now (not the delayed ones), in order; each marked done."""
    keys = []
    while len(queue):
        key = await queue.get()
        queue.done(key)
        keys.append(key)
    return keys
