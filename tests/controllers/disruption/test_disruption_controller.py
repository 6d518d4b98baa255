"""The controller's wiring: which PDB a pod event queues (upstream's getPdbForPod, with the
MultiplePodDisruptionBudgets warning), the PDB handlers, the package surface and
registration, and the whole loop through real informers on a fake clock - including the
recheck when a disruptedPods entry expires."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from disruption_fixtures import NOW, NS, Fixture, drain, new_pdb, new_pod, new_rs, ts
from prometheus_client import CollectorRegistry

import kcontrol_controllers.disruption
from kcontrol.client import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    STATEFULSETS,
)
from kcontrol.clock import FakeClock
from kcontrol.informers import DeletedFinalStateUnknown, SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import FakeClient, FakeRecorder
from kcontrol_controllers.disruption import (
    DELETION_TIMEOUT,
    NAME,
    QUEUE_NAME,
    SPEC,
    STALE_POD_DISRUPTION_TIMEOUT,
    STALE_POD_QUEUE_NAME,
    DisruptionController,
    new_controller,
)

# -- pod -> PDB ---------------------------------------------------------------------------------


async def test_pod_events_queue_the_matching_pdb() -> None:
    f = Fixture()
    f.add_pdb(new_pdb(min_available=1))
    f.add_pdb(new_pdb(min_available=1, name="other", selector={"matchLabels": {"app": "x"}}))
    pod = new_pod("p")
    f.controller.add_pod(pod)
    f.controller.update_pod(pod, pod)
    f.controller.delete_pod(DeletedFinalStateUnknown(f"{NS}/p", pod))
    assert await drain(f.controller.controller.queue) == [f"{NS}/foobar"]
    f.controller.add_pod(new_pod("unmatched", labels={"app": "y"}))
    assert await drain(f.controller.controller.queue) == []
    assert f.recorder.events == []


async def test_empty_selector_matches_and_missing_or_invalid_selectors_do_not() -> None:
    f = Fixture()
    missing = new_pdb(min_available=1, name="missing")
    del missing["spec"]["selector"]
    f.add_pdb(missing)
    f.add_pdb(new_pdb(min_available=1, name="invalid", selector={"matchLabels": {"a/b/c": "x"}}))
    assert f.controller.pdb_for_pod(new_pod("p")) is None
    f.add_pdb(new_pdb(min_available=1, name="everything", selector={}))
    found = f.controller.pdb_for_pod(new_pod("p"))
    assert found is not None and found["metadata"]["name"] == "everything"


async def test_a_pod_of_several_pdbs_queues_one_and_warns() -> None:
    f = Fixture()
    f.add_pdb(new_pdb(min_available=1, name="a"))
    f.add_pdb(new_pdb(min_available=1, name="b"))
    f.controller.add_pod(new_pod("p"))
    assert len(await drain(f.controller.controller.queue)) == 1
    assert f.events("MultiplePodDisruptionBudgets") == [
        'Warning MultiplePodDisruptionBudgets Pod "default"/"p" matches multiple '
        'PodDisruptionBudgets.  Chose "a" arbitrarily.'
    ]


async def test_pdb_events_queue_the_pdb() -> None:
    f = Fixture()
    pdb = new_pdb(min_available=1)
    f.controller.add_pdb(pdb)
    assert await drain(f.controller.controller.queue) == [f"{NS}/foobar"]
    f.controller.update_pdb(pdb, pdb)
    assert await drain(f.controller.controller.queue) == [f"{NS}/foobar"]
    f.controller.delete_pdb(DeletedFinalStateUnknown(f"{NS}/foobar", pdb))
    assert await drain(f.controller.controller.queue) == [f"{NS}/foobar"]


async def test_a_pod_with_a_disruption_target_is_queued_for_when_it_goes_stale() -> None:
    f = Fixture()
    pod = new_pod("p")
    pod["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": ts(NOW - timedelta(seconds=20)),
        }
    )
    f.controller.update_pod(pod, pod)
    queue = f.controller.stale_controller.queue
    assert queue.waiting_len() == 1
    f.clock.step(100 - 0.001)
    assert await drain(queue) == []
    f.clock.step(0.001)
    assert await drain(queue) == [f"{NS}/p"]


# -- surface and registration -----------------------------------------------------------------


def test_public_surface() -> None:
    assert kcontrol_controllers.disruption.__all__ == [
        "DELETION_TIMEOUT",
        "NAME",
        "QUEUE_NAME",
        "SPEC",
        "STALE_POD_DISRUPTION_TIMEOUT",
        "STALE_POD_QUEUE_NAME",
        "DiscoveryScaleSupport",
        "DisruptionController",
        "ScaleFinder",
        "new_controller",
    ]
    assert (NAME, QUEUE_NAME, STALE_POD_QUEUE_NAME) == (
        "disruption-controller",
        "disruption",
        "stale_pod_disruption",
    )
    assert (DELETION_TIMEOUT, STALE_POD_DISRUPTION_TIMEOUT) == (120.0, 120.0)


def test_registered_as_an_opt_in_entry_point_without_flags() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default
    assert SPEC.flags == ()


async def test_factory_wires_the_manager_context() -> None:
    client = FakeClient()
    informers = SharedInformerFactory(client)
    components: list[str] = []

    def recorder_factory(component: str) -> FakeRecorder:
        components.append(component)
        return FakeRecorder()

    ctx = ControllerContext(
        client=client,
        informers=informers,
        options=ManagerOptions(),
        registry=CollectorRegistry(),
        identity="me",
        recorder_factory=recorder_factory,
    )
    controller = new_controller(ctx)
    assert isinstance(controller, DisruptionController)
    assert components == [NAME]
    assert {i.resource for i in informers.informers()} == {
        PODS,
        PODDISRUPTIONBUDGETS,
        REPLICATIONCONTROLLERS,
        REPLICASETS,
        DEPLOYMENTS,
        STATEFULSETS,
    }
    assert len(controller.finders.finders()) == 4, "a fake client gets no scale finder"


# -- the loop -----------------------------------------------------------------------------------


async def settle_until(check: Callable[[], bool], rounds: int = 3000) -> None:
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_the_loop_keeps_the_status_through_real_informers() -> None:
    clock = FakeClock(wall_start=NOW)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    controller = DisruptionController(
        client=client,
        informers=informers,
        recorder=FakeRecorder(),
        clock=clock,
        registry=CollectorRegistry(),
    )
    rs = client.tracker.add(new_rs(3))
    for name in ("a", "b", "c"):
        client.tracker.add(new_pod(name, owner=rs))
    pdb = new_pdb(max_unavailable="34%")
    pdb["status"] = {"disruptedPods": {"a": ts(NOW - timedelta(seconds=DELETION_TIMEOUT - 10))}}
    client.tracker.add(pdb)

    def status() -> tuple[int, int, int, int]:
        s = client.tracker.get(PODDISRUPTIONBUDGETS, "foobar", namespace=NS).get("status") or {}
        return (
            s.get("disruptionsAllowed", -1),
            s.get("currentHealthy", -1),
            s.get("desiredHealthy", -1),
            s.get("expectedPods", -1),
        )

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        task = tasks.create_task(controller.run())
        try:
            # 34% of 3 rounds up to 2 unavailable: 1 desired; "a" was just evicted.
            await settle_until(lambda: status() == (1, 2, 1, 3))
            await client.delete(PODS, "b", namespace=NS)
            await settle_until(lambda: status() == (0, 1, 1, 3))
            clock.step(10.5)  # "a"'s entry expires: the recheck counts it again
            await settle_until(lambda: status() == (1, 2, 1, 3))
            stored = client.tracker.get(PODDISRUPTIONBUDGETS, "foobar", namespace=NS)
            assert "disruptedPods" not in stored["status"]
        finally:
            task.cancel()
            running.cancel()
