"""The package's public surface, its registration with kcontrol-manager, and the controller
running end to end through real informers on the fake client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from daemonset_fixtures import new_daemon_set, new_node
from prometheus_client import CollectorRegistry

import kcontrol_controllers.daemonset as package
from kcontrol.client import CONTROLLERREVISIONS, DAEMONSETS, NODES, PODS
from kcontrol.clock import FakeClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.daemonset import (
    NAME,
    SPEC,
    DaemonSetsController,
    _names,
    new_controller,
)

NAMES = {
    "BACKOFF_GC_INTERVAL",
    "BURST_REPLICAS",
    "DEFAULT_WORKERS",
    "FAILED_DAEMON_POD_REASON",
    "FAILED_PLACEMENT_REASON",
    "NAME",
    "QUEUE_NAME",
    "SELECTING_ALL_REASON",
    "STATUS_UPDATE_RETRIES",
    "SUCCEEDED_DAEMON_POD_REASON",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "UNIQUE_LABEL_KEY",
}


def test_public_surface() -> None:
    assert set(package.__all__) == NAMES | {"SPEC", "DaemonSetsController", "new_controller"}
    assert set(_names.__all__) == NAMES
    for name in NAMES:
        assert getattr(package, name) is getattr(_names, name)


def test_names_are_upstreams() -> None:
    assert package.NAME == "daemonset-controller"
    assert package.QUEUE_NAME == "daemonset"
    assert package.BURST_REPLICAS == 250
    assert package.DEFAULT_WORKERS == 2
    assert package.STATUS_UPDATE_RETRIES == 1
    assert package.BACKOFF_GC_INTERVAL == 60.0
    assert package.UNIQUE_LABEL_KEY == "controller-revision-hash"
    assert package.TEMPLATE_GENERATION_LABEL == "pod-template-generation"
    assert package.TEMPLATE_GENERATION_ANNOTATION == "deprecated.daemonset.template.generation"
    assert package.SELECTING_ALL_REASON == "SelectingAll"
    assert package.FAILED_PLACEMENT_REASON == "FailedPlacement"
    assert package.FAILED_DAEMON_POD_REASON == "FailedDaemonPod"
    assert package.SUCCEEDED_DAEMON_POD_REASON == "SucceededDaemonPod"


def test_registered_as_an_entry_point_off_by_default() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default
    assert [flag.name for flag in SPEC.flags] == ["concurrent-daemonset-syncs"]
    assert SPEC.flags[0].default == 2


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
        flags={"concurrent-daemonset-syncs": 3},
    )
    dsc = new_controller(ctx)
    assert isinstance(dsc, DaemonSetsController)
    assert components == ["daemonset-controller"]
    assert dsc.controller.name == "daemonset"
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "daemonset"}
        )
        == 3
    )
    assert {i.resource for i in informers.informers()} == {
        DAEMONSETS,
        CONTROLLERREVISIONS,
        PODS,
        NODES,
    }


async def settle_until(check: Callable[[], bool], rounds: int = 3000) -> None:
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
    dsc = DaemonSetsController(
        client=client,
        informers=informers,
        recorder=recorder,
        clock=clock,
        registry=CollectorRegistry(),
    )
    ds = new_daemon_set()
    ds["metadata"].pop("uid")

    def pods() -> list[dict[str, object]]:
        items: list[dict[str, object]] = client.tracker.list(PODS, namespace="default")["items"]
        return items

    def status() -> dict[str, object]:
        return client.tracker.get(DAEMONSETS, "foo", namespace="default").get("status") or {}

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(dsc.run())
        try:
            for name in ("a", "b"):
                await client.create(NODES, new_node(name))
            await client.create(DAEMONSETS, ds, namespace="default")
            await settle_until(
                lambda: len(pods()) == 2 and status().get("desiredNumberScheduled") == 2
            )
            assert len(client.tracker.list(CONTROLLERREVISIONS, namespace="default")["items"]) == 1
            # A node joins: it gets its pod.
            await client.create(NODES, new_node("c"))
            await settle_until(
                lambda: len(pods()) == 3 and status().get("desiredNumberScheduled") == 3
            )
        finally:
            controller.cancel()
            running.cancel()


async def test_run_sweeps_the_failed_pods_backoff() -> None:
    clock = FakeClock()
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    dsc = DaemonSetsController(
        client=client,
        informers=informers,
        recorder=FakeRecorder(),
        clock=clock,
        registry=CollectorRegistry(),
    )
    dsc.failed_pods_backoff.next("uid/1/node", clock.now())
    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        controller = tasks.create_task(dsc.run())
        try:
            await settle_until(clock.has_waiters)
            clock.step(60)  # one sweep: the entry is fresh
            await settle_until(clock.has_waiters)
            assert len(dsc.failed_pods_backoff) == 1
            clock.step(31 * 60)  # unused for more than twice the 15 min maximum
            await settle_until(lambda: len(dsc.failed_pods_backoff) == 0)
        finally:
            controller.cancel()
            running.cancel()
