"""The package surface, its registration with kcontrol-manager, the map selector, and the
controller running end to end through real informers on the fake client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry
from replicationcontroller_fixtures import NS, SELECTOR, new_pod, new_rc

import kcontrol_controllers.replicationcontroller
from kcontrol.client import PODS, REPLICASETS, REPLICATIONCONTROLLERS
from kcontrol.clock import FakeClock
from kcontrol.errors import SelectorError
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.replicaset import ReplicaSetController
from kcontrol_controllers.replicationcontroller import (
    EVENT_SOURCE,
    NAME,
    QUEUE_NAME,
    REPLICATION_CONTROLLER,
    SPEC,
    ReplicationManager,
    new_controller,
)
from kcontrol_controllers.replicationcontroller._adapter import map_selector_of
from kcontrol_controllers.replicationcontroller._factory import CONCURRENT_SYNCS


def test_public_surface() -> None:
    assert kcontrol_controllers.replicationcontroller.__all__ == [
        "BURST_REPLICAS",
        "EVENT_SOURCE",
        "NAME",
        "QUEUE_NAME",
        "REPLICATION_CONTROLLER",
        "SPEC",
        "ReplicationManager",
        "new_controller",
    ]
    assert (NAME, EVENT_SOURCE, QUEUE_NAME) == (
        "replicationcontroller-controller",
        "replication-controller",
        "replicationmanager",
    )


def test_registered_as_an_opt_in_entry_point_with_upstreams_flag() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default
    assert SPEC.flags == (CONCURRENT_SYNCS,)
    assert (CONCURRENT_SYNCS.name, CONCURRENT_SYNCS.default) == ("concurrent-rc-syncs", 5)


def test_the_kind_is_the_core_v1_replication_controller() -> None:
    kind = REPLICATION_CONTROLLER
    assert (kind.api_version, kind.kind, kind.resource) == (
        "v1",
        "ReplicationController",
        REPLICATIONCONTROLLERS,
    )
    assert kind.queue_name == QUEUE_NAME
    assert not kind.status_terminating_replicas
    assert kind.sibling_pod_label is None


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
        flags={"concurrent-rc-syncs": 7},
    )

    rm = new_controller(ctx)

    assert isinstance(rm, ReplicationManager) and rm.kind is REPLICATION_CONTROLLER
    assert components == ["replication-controller"]
    assert rm.controller.name == "replicationmanager"
    assert rm.controller.queue.name == "replicationmanager"
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "replicationmanager"}
        )
        == 7
    )
    assert {i.resource for i in informers.informers()} == {REPLICATIONCONTROLLERS, PODS}
    indexes = {i.resource: set(i.indexer.get_indexers()) for i in informers.informers()}
    assert "controllerUID" in indexes[REPLICATIONCONTROLLERS]
    assert "podController" in indexes[PODS]
    assert not any("pod-template-hash" in name for name in indexes[PODS])


def test_runs_beside_the_replicaset_controller_on_shared_informers() -> None:
    informers = SharedInformerFactory(FakeClient())
    rsc = ReplicaSetController(
        client=FakeClient(),
        informers=informers,
        recorder=FakeRecorder(),
        registry=CollectorRegistry(),
    )
    rm = ReplicationManager(
        client=FakeClient(),
        informers=informers,
        recorder=FakeRecorder(),
        registry=CollectorRegistry(),
    )
    assert {i.resource for i in informers.informers()} == {
        REPLICASETS,
        REPLICATIONCONTROLLERS,
        PODS,
    }
    assert (rsc.controller.name, rm.controller.name) == ("replicaset", "replicationmanager")


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        pytest.param({"app": "web"}, {"app": "web", "x": "y"}, True, id="subset"),
        pytest.param({"app": "web", "tier": "front"}, {"app": "web"}, False, id="missing-label"),
        pytest.param({"app": "web"}, {"app": "api"}, False, id="other-value"),
        pytest.param(None, {"app": "web"}, False, id="no-selector-selects-nothing"),
    ],
)
def test_the_map_selector_is_match_labels(
    selector: dict[str, str] | None, labels: dict[str, str], matches: bool
) -> None:
    rc = {"spec": {"selector": selector}}
    assert map_selector_of(rc).matches(labels) is matches


def test_an_invalid_map_selector_raises() -> None:
    with pytest.raises(SelectorError):
        map_selector_of({"spec": {"selector": {"app": "not a valid value!"}}})


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
    rm = ReplicationManager(
        client=client,
        informers=informers,
        recorder=recorder,
        workers=2,
        clock=clock,
        registry=CollectorRegistry(),
    )
    rc = new_rc(3)
    rc["metadata"].pop("uid")
    orphan = new_pod("orphan", labels=dict(SELECTOR))

    def pods() -> list[dict[str, object]]:
        return client.tracker.list(PODS, namespace=NS)["items"]

    def status() -> dict[str, object]:
        return client.tracker.get(REPLICATIONCONTROLLERS, "web", namespace=NS).get("status") or {}

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(rm.run())
        try:
            await client.create(PODS, orphan, namespace=NS)
            await client.create(REPLICATIONCONTROLLERS, rc, namespace=NS)
            # The orphan is adopted, two pods are created, and the status shows three.
            await settle_until(lambda: len(pods()) == 3 and status().get("replicas") == 3)
            refs = [p["metadata"]["ownerReferences"][0] for p in pods()]
            assert {(r["kind"], r["apiVersion"], r["name"]) for r in refs} == {
                ("ReplicationController", "v1", "web")
            }
            assert sum("SuccessfulCreate" in e for e in recorder.events) == 2

            # Scale down to one: two pods go, and the status follows.
            scaled = client.tracker.get(REPLICATIONCONTROLLERS, "web", namespace=NS)
            scaled["spec"]["replicas"] = 1
            await client.update(REPLICATIONCONTROLLERS, scaled)
            await settle_until(lambda: len(pods()) == 1 and status().get("replicas") == 1)
            assert sum("SuccessfulDelete" in e for e in recorder.events) == 2

            # Deleting the RC forgets its expectations.
            await client.delete(REPLICATIONCONTROLLERS, "web", namespace=NS)
            await settle_until(lambda: rm.expectations.get_expectations(f"{NS}/web") is None)
        finally:
            controller.cancel()
            running.cancel()
