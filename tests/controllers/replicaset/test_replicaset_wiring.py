"""The package surface, its registration with kcontrol-manager, and the controller running
end to end through real informers on the fake client (upstream TestWatchControllers,
TestWatchPods, TestExpectationsOnRecreate in spirit)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry
from replicaset_fixtures import NS, new_pod, new_replica_set

import kcontrol_controllers.replicaset
from kcontrol.client import PODS, REPLICASETS
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.replicaset import (
    BURST_REPLICAS,
    NAME,
    QUEUE_NAME,
    SPEC,
    ReplicaSetController,
    new_controller,
)


def test_public_surface() -> None:
    assert kcontrol_controllers.replicaset.__all__ == [
        "BURST_REPLICAS",
        "NAME",
        "QUEUE_NAME",
        "SPEC",
        "ReplicaSetController",
        "new_controller",
    ]
    assert (NAME, QUEUE_NAME, BURST_REPLICAS) == ("replicaset-controller", "replicaset", 500)


def test_registered_as_an_entry_point() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and SPEC.enabled_by_default


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
        flags={"concurrent-replicaset-syncs": 7},
    )

    rsc = new_controller(ctx)

    assert isinstance(rsc, ReplicaSetController)
    assert components == ["replicaset-controller"]
    assert rsc.controller.name == "replicaset"
    assert rsc.controller.queue.name == "replicaset"
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "replicaset"}
        )
        == 7
    )
    assert {i.resource for i in informers.informers()} == {REPLICASETS, PODS}
    indexes = {i.resource: set(i.indexer.get_indexers()) for i in informers.informers()}
    assert "controllerUID" in indexes[REPLICASETS]
    assert "podController" in indexes[PODS]


def test_indexes_shared_with_another_controller_are_added_once() -> None:
    informers = SharedInformerFactory(FakeClient())
    for _ in range(2):
        ReplicaSetController(
            client=FakeClient(),
            informers=informers,
            recorder=FakeRecorder(),
            registry=CollectorRegistry(),
        )


async def settle_until(check: Callable[[], bool], rounds: int = 2000) -> None:
    """Let the event loop run (informers, handlers, workers) until ``check()`` holds."""
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_runs_end_to_end_through_the_informers() -> None:
    clock = FakeClock()
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    recorder = FakeRecorder()
    registry = CollectorRegistry()
    rsc = ReplicaSetController(
        client=client,
        informers=informers,
        recorder=recorder,
        workers=2,
        clock=clock,
        registry=registry,
    )
    rs = new_replica_set(3)
    rs["metadata"].pop("uid")
    orphan = new_pod("orphan", rs, owned=False)

    def pods() -> list[dict[str, object]]:
        return client.tracker.list(PODS, namespace=NS)["items"]

    def status() -> dict[str, object]:
        return client.tracker.get(REPLICASETS, "foobar", namespace=NS).get("status") or {}

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(rsc.run())
        try:
            await client.create(PODS, orphan, namespace=NS)
            await client.create(REPLICASETS, rs, namespace=NS)
            # The orphan is adopted, two pods are created, and the status shows three.
            await settle_until(lambda: len(pods()) == 3 and status().get("replicas") == 3)
            assert all(p["metadata"]["ownerReferences"][0]["name"] == "foobar" for p in pods())
            assert sum("SuccessfulCreate" in e for e in recorder.events) == 2

            # Scale down to one: two pods go, and the status follows.
            scaled = client.tracker.get(REPLICASETS, "foobar", namespace=NS)
            scaled["spec"]["replicas"] = 1
            await client.update(REPLICASETS, scaled)
            await settle_until(lambda: len(pods()) == 1 and status().get("replicas") == 1)
            assert sum("SuccessfulDelete" in e for e in recorder.events) == 2

            # Deleting the ReplicaSet forgets its expectations.
            await client.delete(REPLICASETS, "foobar", namespace=NS)
            await settle_until(lambda: rsc.expectations.get_expectations(f"{NS}/foobar") is None)
        finally:
            controller.cancel()
            running.cancel()


@pytest.mark.parametrize("burst", [0, -1])
def test_burst_must_be_positive(burst: int) -> None:
    with pytest.raises(ValueError, match="burst_replicas"):
        ReplicaSetController(
            client=FakeClient(),
            informers=SharedInformerFactory(FakeClient()),
            recorder=FakeRecorder(),
            burst_replicas=burst,
            registry=CollectorRegistry(),
        )
