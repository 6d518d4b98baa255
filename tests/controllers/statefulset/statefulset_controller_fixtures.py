"""A StatefulSet controller on a fake client, for the controller's unit tests (upstream's
``stateful_set_control_test.go`` and ``stateful_set_test.go`` style): the test stores
objects on the fake server, :meth:`Fixture.observe` copies the server's state into the
informers' caches (as the watches would, the API server's ``Pending`` phase given to new
pods), :meth:`Fixture.sync` syncs the set, and the test asserts the API actions sent."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry
from statefulset_fixtures import NOW, make_running, new_stateful_set

from kcontrol.client import (
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    Object,
    Resource,
)
from kcontrol.clock import FakeClock
from kcontrol.controller import Result
from kcontrol.informers import SharedInformerFactory
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.statefulset import StatefulSetController

NS = "default"
KEY = f"{NS}/foo"
REVISION_LABEL = "controller-revision-hash"

__all__ = [
    "KEY",
    "NS",
    "Fixture",
    "new_set",
]


def new_set(replicas: int = 3, **spec: Any) -> Object:
    """The fixtures' set ``foo`` (claim template ``datadir``) with ``replicas`` and the given
    ``spec`` fields; ``partition`` / ``max_unavailable`` as keywords go to
    ``updateStrategy.rollingUpdate``."""
    set_ = new_stateful_set(replicas)
    rolling: dict[str, Any] = {}
    if "partition" in spec:
        rolling["partition"] = spec.pop("partition")
    if "max_unavailable" in spec:
        rolling["maxUnavailable"] = spec.pop("max_unavailable")
    if rolling:
        set_["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    set_["spec"].update(spec)
    return set_


class Fixture:
    """The controller, its fake client, clock, recorder and informers."""

    def __init__(self, *, max_unavailable: bool = False) -> None:
        self.clock = FakeClock(wall_start=NOW)
        self.client = FakeClient(clock=self.clock)
        self.informers = SharedInformerFactory(self.client, clock=self.clock)
        self.recorder = FakeRecorder()
        self.registry = CollectorRegistry()
        self.ssc = StatefulSetController(
            client=self.client,
            informers=self.informers,
            recorder=self.recorder,
            clock=self.clock,
            registry=self.registry,
            max_unavailable=max_unavailable,
        )
        self.caches = {
            resource: self.informers.for_resource(resource).indexer
            for resource in (STATEFULSETS, PODS, CONTROLLERREVISIONS, PERSISTENTVOLUMECLAIMS)
        }

    # -- state -----------------------------------------------------------------------------

    def add(self, obj: Object) -> Object:
        """Store ``obj`` on the server (not yet in the caches); returns it as stored."""
        return self.client.tracker.add(copy.deepcopy(obj))

    def server(self, resource: Resource) -> list[Object]:
        return self.client.tracker.objects(resource, NS)

    def server_set(self) -> Object:
        return self.client.tracker.get(STATEFULSETS, "foo", namespace=NS)

    def pods(self) -> dict[str, Object]:
        return {p["metadata"]["name"]: p for p in self.server(PODS)}

    def observe(self) -> None:
        """What the watches would deliver: every cache replaced by the server's objects;
        pods without a phase first get ``Pending`` (the API server's default)."""
        for pod in self.server(PODS):
            if not (pod.get("status") or {}).get("phase"):
                pod["status"] = {"phase": "Pending"}
                self.client.tracker.update(PODS, pod, namespace=NS, subresource="status")
        for resource, cache in self.caches.items():
            cache.replace(self.server(resource))

    async def sync(self) -> Result | None:
        """Observe, then sync the set ``foo``."""
        self.observe()
        return await self.ssc.sync(KEY)

    def set_status(
        self,
        name: str,
        phase: str = "Running",
        *,
        ready: bool = True,
        ready_for: timedelta = timedelta(hours=1),
    ) -> Object:
        """Give the server's pod ``name`` a phase (ready, when running and ``ready``)."""
        pod = self.client.tracker.get(PODS, name, namespace=NS)
        if phase == "Running":
            make_running(pod, ready=ready, ready_for=ready_for)
        else:
            pod["status"] = {"phase": phase}
        return self.client.tracker.update(PODS, pod, namespace=NS, subresource="status")

    def run_all(self) -> None:
        """Every pod on the server running and ready for an hour."""
        for name in self.pods():
            self.set_status(name)

    def terminate(self, name: str) -> Object:
        """Mark the server's pod ``name`` terminating (a finalizer keeps it)."""
        pod = self.client.tracker.get(PODS, name, namespace=NS)
        pod["metadata"]["finalizers"] = ["example.com/keep"]
        self.client.tracker.update(PODS, pod, namespace=NS)
        return self.client.tracker.delete(PODS, name, namespace=NS)

    def update_template(self, image: str) -> Object:
        """Change the server's set's image (a new generation)."""
        set_ = self.server_set()
        set_["spec"]["template"]["spec"]["containers"][0]["image"] = image
        set_["metadata"]["generation"] = int(set_["metadata"].get("generation") or 1) + 1
        return self.client.tracker.update(STATEFULSETS, set_, namespace=NS)

    def patch_set(self, spec: dict[str, Any]) -> Object:
        set_ = self.server_set()
        set_["spec"].update(spec)
        set_["metadata"]["generation"] = int(set_["metadata"].get("generation") or 1) + 1
        return self.client.tracker.update(STATEFULSETS, set_, namespace=NS)

    async def converge(self, *, limit: int = 30) -> None:
        """Sync, make every pod running and ready, and repeat until a sync writes nothing."""
        for _ in range(limit):
            self.client.clear_actions()
            self.run_all()
            await self.sync()
            if not self.writes():
                self.run_all()
                return
        raise AssertionError("the set did not converge")

    # -- what the controller did -----------------------------------------------------------

    def writes(self) -> list[Action]:
        return [a for a in self.client.actions if a.verb not in ("get", "list", "watch")]

    def created(self, resource: Resource = PODS) -> list[str]:
        return [_name(a) for a in self.client.actions_for("create", resource)]

    def deleted(self, resource: Resource = PODS) -> list[str]:
        return [a.name for a in self.client.actions_for("delete", resource)]

    def updated(self, resource: Resource = PODS) -> list[str]:
        return [_name(a) for a in self.client.actions_for("update", resource)]

    def status_updates(self) -> list[Action]:
        return self.client.actions_for("update", STATEFULSETS, subresource="status")

    def last_status(self) -> dict[str, Any]:
        (*_, update) = self.status_updates()
        assert update.object is not None
        status: dict[str, Any] = update.object["status"]
        return status

    def revision_of(self, pod_name: str) -> str:
        return str(self.pods()[pod_name]["metadata"]["labels"][REVISION_LABEL])

    def revisions(self) -> list[Object]:
        return sorted(self.server(CONTROLLERREVISIONS), key=lambda r: int(r["revision"]))


def _name(action: Action) -> str:
    if action.name:
        return action.name
    assert action.object is not None
    return str(action.object["metadata"]["name"])
