"""The StatefulSet controller's registration with kcontrol-manager, and the controller running
end to end through real informers on the fake client (its consistency check reading the
informers' progress), with a stand-in kubelet making pods run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry
from statefulset_controller_fixtures import NS, new_set
from statefulset_fixtures import NOW, make_running

from kcontrol.client import (
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
)
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.statefulset import NAME, SPEC, StatefulSetController, new_controller


def test_registered_as_an_opt_in_entry_point() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default


def test_factory_wires_the_manager_context() -> None:
    client = FakeClient()
    informers = SharedInformerFactory(client)
    components: list[str] = []

    def recorder_factory(component: str) -> FakeRecorder:
        components.append(component)
        return FakeRecorder()

    registry = CollectorRegistry()
    ctx = ControllerContext(
        client=client,
        informers=informers,
        options=ManagerOptions(),
        registry=registry,
        identity="me",
        recorder_factory=recorder_factory,
        flags={"concurrent-statefulset-syncs": 7, "statefulset-max-unavailable": True},
    )

    ssc = new_controller(ctx)

    assert isinstance(ssc, StatefulSetController)
    assert components == ["statefulset-controller"]
    assert ssc.controller.queue.name == "statefulset"
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "statefulset"}
        )
        == 7
    )
    assert ssc.max_unavailable is True
    assert {i.resource for i in informers.informers()} == {
        STATEFULSETS,
        PODS,
        CONTROLLERREVISIONS,
        PERSISTENTVOLUMECLAIMS,
    }
    indexes = {i.resource: set(i.indexer.get_indexers()) for i in informers.informers()}
    assert "podController" in indexes[PODS]
    assert "controllerRevisionController" in indexes[CONTROLLERREVISIONS]


async def settle_until(check: Callable[[], bool], rounds: int = 5000) -> None:
    """Let the event loop run (informers, handlers, workers) until ``check()`` holds."""
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def kubelet(client: FakeClient) -> None:
    """Makes every pod without a phase running and ready, as kwok would."""
    while True:
        for pod in client.tracker.objects(PODS, NS):
            if not (pod.get("status") or {}).get("phase"):
                make_running(pod)
                with contextlib.suppress(Exception):
                    await client.update_status(PODS, pod, namespace=NS)
        await asyncio.sleep(0)


async def test_runs_end_to_end_through_the_informers() -> None:
    clock = FakeClock(wall_start=NOW)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    recorder = FakeRecorder()
    ssc = StatefulSetController(
        client=client,
        informers=informers,
        recorder=recorder,
        workers=2,
        clock=clock,
        registry=CollectorRegistry(),
    )
    set_ = new_set(3)
    set_["metadata"].pop("uid")

    def pods() -> list[str]:
        return sorted(p["metadata"]["name"] for p in client.tracker.objects(PODS, NS))

    def status() -> dict[str, Any]:
        found: dict[str, Any] = (
            client.tracker.get(STATEFULSETS, "foo", namespace=NS).get("status") or {}
        )
        return found

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(ssc.run())
        node = tasks.create_task(kubelet(client))
        try:
            await client.create(STATEFULSETS, set_, namespace=NS)
            await settle_until(
                lambda: pods() == ["foo-0", "foo-1", "foo-2"] and status().get("readyReplicas") == 3
            )
            assert len(client.tracker.objects(PERSISTENTVOLUMECLAIMS, NS)) == 3
            assert status()["currentRevision"] == status()["updateRevision"]

            scaled = client.tracker.get(STATEFULSETS, "foo", namespace=NS)
            scaled["spec"]["replicas"] = 1
            await client.update(STATEFULSETS, scaled)
            await settle_until(lambda: pods() == ["foo-0"] and status().get("replicas") == 1)
            assert sum("SuccessfulDelete" in e for e in recorder.events) == 2
        finally:
            node.cancel()
            controller.cancel()
            running.cancel()
