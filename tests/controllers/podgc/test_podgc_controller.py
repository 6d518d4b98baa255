"""The collector on the fake client: upstream's TestGCTerminated, TestGCOrphaned (the
quarantine, the live GET, the node coming back), TestGCUnscheduledTerminating and
TestGCTerminating cases as the API calls they send; failures and metrics; the package
surface and registration; and the periodic loop through real informers on a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from podgc_fixtures import NOW, NS, OUT_OF_SERVICE, Fixture, new_node, new_pod, ts
from prometheus_client import CollectorRegistry

import kcontrol_controllers.podgc
from kcontrol.client import NODES, PODS
from kcontrol.clock import FakeClock
from kcontrol.errors import InternalError, NotFound
from kcontrol.informers import SharedInformerFactory
from kcontrol.manager import ControllerContext, ControllerRegistry, ManagerOptions
from kcontrol.testing import Action, FakeClient, FakeRecorder
from kcontrol_controllers.podgc import (
    DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    GC_CHECK_PERIOD,
    NAME,
    NODE_QUEUE_NAME,
    QUARANTINE_TIME,
    SPEC,
    TERMINATED_POD_GC_THRESHOLD,
    PodGCController,
    new_controller,
)

QUARANTINE = timedelta(seconds=QUARANTINE_TIME)
ORPHANED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}


def assert_force_deleted(f: Fixture, *names: str) -> None:
    assert sorted(f.deleted()) == sorted(names)
    for delete in f.deletes():
        assert delete.options == {"grace_period_seconds": 0}, delete


def phase(f: Fixture, name: str) -> str:
    pod = f.client.tracker.get(PODS, name, namespace=NS)
    return str(pod["status"].get("phase"))


# -- TestGCTerminated ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phases", "threshold", "deleted"),
    [
        pytest.param(["Failed", "Succeeded"], 0, [], id="threshold 0 disables"),
        pytest.param(["Failed", "Succeeded", "Failed"], 1, ["a", "b"], id="3 over 1"),
        pytest.param(["Running", "Succeeded", "Failed"], 1, ["b"], id="running kept"),
        pytest.param(["Failed", "Succeeded"], 1, ["a"], id="2 over 1"),
        pytest.param(["Failed", "Succeeded"], 5, [], id="under"),
    ],
)
async def test_gc_terminated(phases: list[str], threshold: int, deleted: list[str]) -> None:
    f = Fixture(threshold)
    f.add_node(new_node())
    for hours, (name, pod_phase) in enumerate(zip("abc", phases, strict=False), start=1):
        f.add_pod(new_pod(name, pod_phase, hours=hours))
    await f.gc.gc()
    assert_force_deleted(f, *deleted)
    assert f.status_patches() == [], "terminated pods are deleted as they are"
    assert f.counted("terminated") == (len(deleted), 0)


async def test_gc_terminated_deletes_the_oldest_whatever_their_names() -> None:
    f = Fixture(2)
    f.add_node(new_node())
    f.add_pods(*(new_pod(f"t-{n}", "Succeeded", hours=10 - n) for n in range(1, 6)))
    await f.gc.gc()
    assert_force_deleted(f, "t-5", "t-4", "t-3")
    remaining = sorted(p["metadata"]["name"] for p in f.client.tracker.list(PODS)["items"])
    assert remaining == ["t-1", "t-2"]


async def test_gc_terminated_patches_a_pod_without_phase_failed_first() -> None:
    f = Fixture(1)
    f.add_node(new_node())
    f.add_pods(new_pod("a", None, hours=1), new_pod("b", "Failed", hours=2))
    await f.gc.gc()
    (patch,) = f.status_patches()
    assert (patch.name, patch.patch) == (
        "a",
        {"metadata": {"uid": "uid-a"}, "status": {"phase": "Failed"}},
    )
    assert_force_deleted(f, "a")


# -- TestGCOrphaned -----------------------------------------------------------------------------


async def test_orphaned_pods_are_deleted_after_the_quarantine_and_a_get() -> None:
    f = Fixture()
    f.add_pods(new_pod("a", "Running", node="gone"), new_pod("b", "Running", node="node"))
    f.add_node(new_node("node"))

    await f.gc.gc()
    assert (f.deleted(), f.node_gets()) == ([], []), "quarantined: no GET, no delete yet"

    f.clock.step(QUARANTINE_TIME - 0.1)
    await f.gc.gc()
    assert (f.deleted(), f.node_gets()) == ([], []), "still in quarantine"

    f.clock.step(0.1)
    await f.gc.gc()
    assert f.node_gets() == ["gone"]
    (patch,) = f.status_patches()
    assert patch.name == "a"
    assert patch.patch == {
        "metadata": {"uid": "uid-a"},
        "status": {
            "phase": "Failed",
            "$setElementOrder/conditions": [{"type": "DisruptionTarget"}],
            "conditions": [{**ORPHANED, "lastTransitionTime": ts(NOW + QUARANTINE)}],
        },
    }
    assert [a.verb for a in f.client.actions if a.resource == PODS] == ["patch", "delete"]
    assert_force_deleted(f, "a")
    assert f.counted("orphaned") == (1, 0)

    await f.gc.gc()
    assert f.node_gets() == ["gone"], "the quarantine was emptied"


async def test_the_quarantine_keeps_the_first_deadline() -> None:
    """Collections every 20 s re-add the missing node: its quarantine still ends 40 s after
    it was first seen missing (the delaying queue keeps the earlier time)."""
    f = Fixture()
    f.add_pod(new_pod("a", "Running", node="gone"))
    for _ in range(2):
        await f.gc.gc()
        f.clock.step(GC_CHECK_PERIOD)
    await f.gc.gc()
    assert f.deleted() == ["a"]


@pytest.mark.parametrize(
    ("phase_before", "patched"),
    [("Failed", False), ("Succeeded", False), ("Running", True), ("Pending", True)],
)
async def test_orphaned_pods_in_any_phase(phase_before: str, patched: bool) -> None:
    f = Fixture(0, quarantine_time=0)
    f.add_pod(new_pod("a", phase_before, node="gone"))
    await f.gc.gc()
    assert_force_deleted(f, "a")
    assert len(f.status_patches()) == int(patched)


async def test_a_node_back_in_the_cache_during_the_quarantine_saves_its_pods() -> None:
    f = Fixture()
    f.add_pod(new_pod("a", "Running", node="late"))
    await f.gc.gc()
    f.cache_node(new_node("late"))  # the informer caught up
    f.clock.step(QUARANTINE_TIME)
    await f.gc.gc()
    assert (f.deleted(), f.node_gets()) == ([], [])


async def test_a_node_the_get_finds_saves_its_pods() -> None:
    f = Fixture()
    f.add_pod(new_pod("a", "Running", node="behind"))
    f.server_node(new_node("behind"))  # on the server, not yet in the cache
    await f.gc.gc()
    f.clock.step(QUARANTINE_TIME)
    await f.gc.gc()
    assert f.node_gets() == ["behind"]
    assert f.deleted() == []


async def test_a_failed_get_decides_nothing_and_quarantines_again() -> None:
    f = Fixture()
    f.add_pod(new_pod("a", "Running", node="gone"))
    failures = [InternalError("etcd is sad")]

    def fail(action: Action) -> None:
        if failures:
            raise failures.pop()

    f.client.prepend_reactor("get", NODES, fail)
    await f.gc.gc()
    f.clock.step(QUARANTINE_TIME)
    await f.gc.gc()
    assert (f.node_gets(), f.deleted()) == (["gone"], []), "an error is not a NotFound"
    f.clock.step(QUARANTINE_TIME - 1)
    await f.gc.gc()
    assert f.node_gets() == ["gone"], "quarantined afresh by the last collection"
    f.clock.step(1)
    await f.gc.gc()
    assert (f.node_gets(), f.deleted()) == (["gone", "gone"], ["a"])


async def test_pods_without_node_are_not_orphans() -> None:
    f = Fixture(0, quarantine_time=0)
    f.add_pod(new_pod("a", "Pending", node=""))
    await f.gc.gc()
    assert (f.deleted(), f.node_gets()) == ([], [])


# -- TestGCUnscheduledTerminating ---------------------------------------------------------------


async def test_gc_unscheduled_terminating() -> None:
    f = Fixture()
    f.add_node(new_node())
    f.add_pods(
        new_pod("a", "Failed", node="", deleting=True),
        new_pod("b", "Succeeded", node="", deleting=True),
        new_pod("c", "Running", node="", deleting=True),
        new_pod("d", "Failed", node="", deleting=False),
        new_pod("e", "Running", node="node", deleting=True),
    )
    await f.gc.gc()
    assert_force_deleted(f, "a", "b", "c")
    assert [p.name for p in f.status_patches()] == ["c"], "only the running one is marked Failed"
    assert f.counted("unscheduled") == (3, 0)


# -- TestGCTerminating (out-of-service) ---------------------------------------------------------


async def test_gc_terminating_on_out_of_service_nodes() -> None:
    f = Fixture()
    f.add_node(new_node("oos", ready=False, taints=[OUT_OF_SERVICE]))
    f.add_node(new_node("ready-oos", ready=True, taints=[OUT_OF_SERVICE]))
    f.add_node(new_node("notready", ready=False))
    f.add_pods(
        new_pod("a", "Running", node="oos", deleting=True),
        new_pod("b", "Succeeded", node="oos", deleting=True),
        new_pod("c", "Running", node="oos", deleting=False),
        new_pod("d", "Running", node="ready-oos", deleting=True),
        new_pod("e", "Running", node="notready", deleting=True),
    )
    await f.gc.gc()
    assert_force_deleted(f, "a", "b")
    (patch,) = f.status_patches()
    assert (patch.name, patch.patch) == (
        "a",
        {"metadata": {"uid": "uid-a"}, "status": {"phase": "Failed"}},
    )
    assert phase(f, "a") == "Failed"
    assert f.counted("out-of-service") == (2, 0)


# -- failures -----------------------------------------------------------------------------------


async def test_one_failed_delete_is_counted_and_stops_no_other() -> None:
    f = Fixture(1)
    f.add_node(new_node())
    f.add_pods(*(new_pod(n, "Failed", hours=h) for h, n in enumerate("abcd", start=1)))

    def fail(action: Action) -> None:
        if action.name == "b":
            raise InternalError("no")

    f.client.prepend_reactor("delete", PODS, fail)
    await f.gc.gc()
    assert sorted(f.deleted()) == ["a", "b", "c"]
    assert f.counted("terminated") == (3, 1)
    with pytest.raises(NotFound):
        f.client.tracker.get(PODS, "a", namespace=NS)


async def test_a_failed_status_patch_skips_the_delete() -> None:
    f = Fixture(0, quarantine_time=0)
    f.add_pod(new_pod("a", "Running", node="gone"))

    def fail(action: Action) -> None:
        raise InternalError("no")

    f.client.prepend_reactor("patch", PODS, fail)
    await f.gc.gc()
    assert f.deleted() == []
    assert f.counted("orphaned") == (1, 1)


async def test_a_pod_deleted_by_an_earlier_pass_fails_not_found_later() -> None:
    """Upstream reads the pods once per collection: a terminated pod on a gone node is
    deleted by the terminated pass and again, NotFound, by the orphaned pass."""
    f = Fixture(1, quarantine_time=0)
    f.add_pods(
        new_pod("a", "Failed", node="gone", hours=1), new_pod("b", "Failed", node="gone", hours=2)
    )
    await f.gc.gc()
    assert f.deleted() == ["a", "a", "b"]
    assert f.counted("terminated") == (1, 0)
    assert f.counted("orphaned") == (2, 1)


# -- surface and registration -------------------------------------------------------------------


def test_public_surface() -> None:
    assert kcontrol_controllers.podgc.__all__ == [
        "DEFAULT_TERMINATED_POD_GC_THRESHOLD",
        "GC_CHECK_PERIOD",
        "NAME",
        "NODE_QUEUE_NAME",
        "QUARANTINE_TIME",
        "SPEC",
        "TERMINATED_POD_GC_THRESHOLD",
        "PodGCController",
        "new_controller",
    ]
    assert (NAME, NODE_QUEUE_NAME, GC_CHECK_PERIOD, QUARANTINE_TIME) == (
        "pod-garbage-collector-controller",
        "orphaned_pods_nodes",
        20.0,
        40.0,
    )


def test_registered_as_an_entry_point_with_kcms_flag() -> None:
    registry = ControllerRegistry.from_entry_points()
    assert NAME in registry
    assert SPEC.factory is new_controller and not SPEC.enabled_by_default
    assert SPEC.flags == (TERMINATED_POD_GC_THRESHOLD,)
    assert (TERMINATED_POD_GC_THRESHOLD.name, TERMINATED_POD_GC_THRESHOLD.default) == (
        "terminated-pod-gc-threshold",
        DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    )
    assert DEFAULT_TERMINATED_POD_GC_THRESHOLD == 12500
    assert TERMINATED_POD_GC_THRESHOLD in registry.flags()


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
        flags={"terminated-pod-gc-threshold": 1},
    )
    podgc = new_controller(ctx)
    assert isinstance(podgc, PodGCController)
    assert components == [], "upstream records no events"
    assert {i.resource for i in informers.informers()} == {PODS, NODES}
    informers.for_resource(NODES).indexer.add(new_node())
    for hours, name in enumerate("ab", start=1):
        pod = client.tracker.add(new_pod(name, "Succeeded", hours=hours))
        informers.for_resource(PODS).indexer.add(pod)
    await podgc.collector.gc()
    assert [a.name for a in client.actions_for("delete", PODS)] == ["a"], "the flag's threshold"


# -- the loop -----------------------------------------------------------------------------------


async def settle(rounds: int = 200) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def settle_until(check: Callable[[], bool], rounds: int = 2000) -> None:
    for _ in range(rounds):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_the_loop_collects_every_period_through_real_informers() -> None:
    clock = FakeClock(wall_start=NOW)
    client = FakeClient(clock=clock)
    informers = SharedInformerFactory(client, clock=clock)
    podgc = PodGCController(
        client=client,
        informers=informers,
        terminated_pod_threshold=1,
        clock=clock,
        registry=CollectorRegistry(),
    )
    client.tracker.add(new_node("node"))
    for hours, name in enumerate("ab", start=1):
        client.tracker.add(new_pod(name, "Succeeded", hours=hours))
    client.tracker.add(new_pod("orphan", "Running", node="gone"))

    def deleted() -> list[str]:
        return [a.name for a in client.actions_for("delete", PODS)]

    async with asyncio.TaskGroup() as tasks:
        running = tasks.create_task(informers.run())
        await informers.wait_for_cache_sync()
        controller = tasks.create_task(podgc.run())
        try:
            await settle_until(lambda: deleted() == ["a"])
            await settle()
            assert deleted() == ["a"], "one collection at start: the orphan is quarantined"

            await client.create(PODS, new_pod("c", "Failed", hours=3), namespace=NS)
            clock.step(GC_CHECK_PERIOD - 0.1)
            await settle()
            assert deleted() == ["a"], "nothing before the period is over"
            clock.step(0.1)
            await settle_until(lambda: deleted() == ["a", "b"])

            clock.step(GC_CHECK_PERIOD)  # 40 s: the quarantine is over
            await settle_until(lambda: "orphan" in deleted())
            assert client.actions_for("get", NODES)[0].name == "gone"
        finally:
            controller.cancel()
            running.cancel()
