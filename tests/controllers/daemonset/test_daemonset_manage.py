"""Placing daemon pods, after upstream daemon_controller_test.go: one pod per eligible node,
node selectors and affinity, taints and tolerations, unschedulable nodes, nodes going away,
misscheduled and extra pods, failed pods and their backoff, slow start."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from daemonset_fixtures import (
    NO_EXECUTE_TAINTS,
    NO_SCHEDULE_TAINTS,
    NO_SCHEDULE_TOLERATIONS,
    NOW,
    SIMPLE_DAEMON_SET_LABEL,
    SIMPLE_DAEMON_SET_LABEL2,
    Fixture,
    daemon_pod,
    mark_pod_ready,
    new_daemon_set,
    new_node,
    node_of,
    surge,
)

from kcontrol.client import PODS
from kcontrol.controller import ConsistencyStore
from kcontrol.errors import Forbidden, StaleCache
from kcontrol.testing import Action
from tests.controllers.worker_helpers import sync_as_worker


def owned_pod(
    fx: Fixture, name: str, node: str, ds: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """A running, ready pod of ``ds`` bound to ``node``, stored on the server and cached."""
    ds = ds if ds is not None else fx.server_ds()
    pod = mark_pod_ready(daemon_pod(name, node, SIMPLE_DAEMON_SET_LABEL, **kwargs))
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": ds["metadata"]["name"],
            "uid": ds["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return fx.add_pod(pod)


async def test_one_pod_per_node() -> None:
    fx = Fixture()
    fx.add_nodes(5)
    fx.add_ds(new_daemon_set())
    await fx.sync()
    assert fx.created_nodes() == [f"node-{i}" for i in range(5)]
    pod = fx.created_pods()[0]
    assert pod["metadata"]["generateName"] == "foo-"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert pod["metadata"]["labels"]["controller-revision-hash"]
    tolerations = {t["key"] for t in pod["spec"]["tolerations"]}
    assert "node.kubernetes.io/unschedulable" in tolerations
    assert "nodeName" not in pod["spec"]  # the scheduler binds it
    assert sum(e.startswith("Normal SuccessfulCreate") for e in fx.recorder.events) == 5


async def test_nothing_more_once_every_node_has_its_pod() -> None:
    fx = Fixture()
    fx.add_nodes(3)
    fx.add_ds(new_daemon_set())
    await fx.sync_and_observe()
    fx.reset()
    await fx.sync_and_observe()
    assert fx.created_pods() == [] and fx.deleted_pods() == []
    assert fx.last_status()["desiredNumberScheduled"] == 3
    assert fx.last_status()["currentNumberScheduled"] == 3


async def test_no_nodes_no_pods_status_zero() -> None:
    fx = Fixture()
    fx.add_ds(new_daemon_set())
    await fx.sync()
    assert fx.created_pods() == []
    status = fx.last_status()
    assert status["desiredNumberScheduled"] == 0
    assert status["observedGeneration"] == 1


async def test_node_selector_picks_nodes() -> None:
    fx = Fixture()
    fx.add_nodes(4)
    fx.add_nodes(3, {"color": "blue"}, prefix="blue-")
    fx.add_ds(new_daemon_set(nodeSelector={"color": "blue"}))
    await fx.sync()
    assert fx.created_nodes() == ["blue-0", "blue-1", "blue-2"]


async def test_required_node_affinity_kept_and_pinned() -> None:
    fx = Fixture()
    fx.add_nodes(2, {"zone": "a"}, prefix="a-")
    fx.add_nodes(2, {"zone": "b"}, prefix="b-")
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    fx.add_ds(new_daemon_set(affinity=affinity))
    await fx.sync()
    assert fx.created_nodes() == ["b-0", "b-1"]
    # Each pod's required affinity is replaced by its node's name alone.
    for pod in fx.created_pods():
        terms = pod["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert terms["nodeSelectorTerms"] == [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_of(pod)]}]}
        ]


async def test_template_node_name_only_that_node() -> None:
    fx = Fixture()
    fx.add_nodes(3)
    fx.add_ds(new_daemon_set(nodeName="node-1"))
    await fx.sync()
    assert fx.created_nodes() == ["node-1"]


async def test_tainted_node_without_toleration_gets_no_pod() -> None:
    fx = Fixture()
    fx.add_node(new_node("tainted", taints=NO_SCHEDULE_TAINTS))
    fx.add_node(new_node("plain"))
    fx.add_ds(new_daemon_set())
    await fx.sync()
    assert fx.created_nodes() == ["plain"]
    assert fx.last_status()["desiredNumberScheduled"] == 1


async def test_tainted_node_with_toleration_gets_a_pod() -> None:
    fx = Fixture()
    fx.add_node(new_node("tainted", taints=NO_SCHEDULE_TAINTS))
    fx.add_ds(new_daemon_set(tolerations=NO_SCHEDULE_TOLERATIONS))
    await fx.sync()
    assert fx.created_nodes() == ["tainted"]


async def test_no_schedule_taint_keeps_a_running_pod() -> None:
    fx = Fixture()
    fx.add_node(new_node("tainted", taints=NO_SCHEDULE_TAINTS))
    fx.add_ds(new_daemon_set())
    owned_pod(fx, "p", "tainted")
    await fx.sync()
    assert fx.deleted_pods() == [] and fx.created_pods() == []
    status = fx.last_status()
    assert status["desiredNumberScheduled"] == 0
    assert status["numberMisscheduled"] == 1


async def test_no_execute_taint_evicts_a_running_pod() -> None:
    fx = Fixture()
    fx.add_node(new_node("tainted", taints=NO_EXECUTE_TAINTS))
    fx.add_ds(new_daemon_set())
    owned_pod(fx, "p", "tainted")
    await fx.sync()
    assert fx.deleted_pods() == ["p"]
    assert "Normal SuccessfulDelete Deleted pod: p" in fx.recorder.events


@pytest.mark.parametrize(
    "node",
    [
        new_node("cordoned", unschedulable=True),
        new_node(
            "cordoned",
            unschedulable=True,
            taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
        ),
        new_node(
            "cordoned", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
        ),
        new_node(
            "cordoned",
            taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
        ),
        new_node(
            "cordoned",
            taints=[{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}],
        ),
    ],
    ids=["unschedulable", "unschedulable-taint", "not-ready", "unreachable", "memory-pressure"],
)
async def test_unschedulable_or_not_ready_node_still_gets_a_pod(node: dict[str, Any]) -> None:
    fx = Fixture()
    fx.add_node(node)
    fx.add_ds(new_daemon_set())
    await fx.sync()
    assert fx.created_nodes() == ["cordoned"]


def misscheduled() -> Fixture:
    """A DaemonSet for blue nodes with a pod on a red node and one on a blue node."""
    fx = Fixture()
    fx.add_node(new_node("red", {"color": "red"}))
    fx.add_node(new_node("blue", {"color": "blue"}))
    fx.add_ds(new_daemon_set(nodeSelector={"color": "blue"}))
    owned_pod(fx, "on-red", "red")
    owned_pod(fx, "on-blue", "blue")
    return fx


async def test_misscheduled_pod_is_deleted() -> None:
    fx = misscheduled()
    await fx.sync()
    assert fx.deleted_pods() == ["on-red"]
    assert fx.created_pods() == []
    assert fx.last_status()["numberMisscheduled"] == 1


async def test_status_counts_the_pods_as_the_cache_has_them_after_the_writes() -> None:
    # The deleted pod's event arrives while the sync awaits its DELETE: the status written
    # at the end of that sync no longer counts it (upstream reads the pods again), rather
    # than leaving the change to a status write of the next sync.
    fx = misscheduled()

    def watch_event_arrives(action: Action) -> None:
        cached = fx.pod_informer.indexer.get_by_key(f"default/{action.name}")
        assert cached is not None
        fx.pod_informer.indexer.delete(cached)

    fx.client.prepend_reactor("delete", "pods", watch_event_arrives)
    await fx.sync()
    assert fx.deleted_pods() == ["on-red"]
    assert fx.last_status()["numberMisscheduled"] == 0
    assert fx.last_status()["currentNumberScheduled"] == 1


async def test_extra_pods_on_a_node_all_but_the_oldest_deleted() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    fx.add_ds(new_daemon_set())
    owned_pod(fx, "young", "n", created=NOW - timedelta(minutes=1))
    owned_pod(fx, "old", "n", created=NOW - timedelta(hours=1))
    owned_pod(fx, "middle", "n", created=NOW - timedelta(minutes=10))
    await fx.sync()
    assert fx.deleted_pods() == ["middle", "young"]


async def test_node_removed_unbound_pod_deleted_and_status_drops_it() -> None:
    fx = Fixture()
    fx.add_nodes(2)
    fx.add_ds(new_daemon_set())
    await fx.sync_and_observe()  # two pods, pinned by affinity, never bound
    gone = fx.node_informer.indexer.get_by_key("node-1")
    assert gone is not None
    fx.node_informer.indexer.delete(gone)
    fx.dsc.delete_node(gone)
    assert await fx.drain_queue() == ["default/foo"]
    fx.reset()
    await fx.sync()
    (deleted,) = fx.deleted_pods()
    pod = next(p for p in fx.pod_informer.indexer.list() if p["metadata"]["name"] == deleted)
    assert node_of(pod) == "node-1"
    assert fx.last_status()["desiredNumberScheduled"] == 1


async def test_pods_of_another_daemon_set_are_left_alone() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    other = fx.add_ds(new_daemon_set("other"))
    fx.add_ds(new_daemon_set())
    pod = daemon_pod("theirs", "n", SIMPLE_DAEMON_SET_LABEL)
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "other",
            "uid": other["metadata"]["uid"],
            "controller": True,
        }
    ]
    fx.add_pod(mark_pod_ready(pod))
    await fx.sync()
    assert fx.created_nodes() == ["n"]  # theirs does not count for foo
    assert fx.deleted_pods() == []


async def test_matching_orphan_is_adopted() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    fx.add_ds(new_daemon_set())
    fx.add_pod(mark_pod_ready(daemon_pod("orphan", "n", SIMPLE_DAEMON_SET_LABEL)))
    fx.add_pod(mark_pod_ready(daemon_pod("stranger", "n", SIMPLE_DAEMON_SET_LABEL2)))
    await fx.sync()
    patched = [a.name for a in fx.client.actions_for("patch", PODS)]
    assert patched == ["orphan"]  # once: the status counts it without claiming it again
    assert fx.created_pods() == []  # the adopted pod is the node's pod
    assert fx.last_status()["currentNumberScheduled"] == 1


async def test_failed_pod_deleted_with_backoff() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    ds = new_daemon_set()
    ds["status"] = {"observedGeneration": 1}  # the backoff key holds the observed generation
    fx.add_ds(ds)
    pod = owned_pod(fx, "failed", "n")
    pod["status"] = {"phase": "Failed"}
    fx.pod_informer.indexer.update(pod)
    await fx.sync()
    assert fx.deleted_pods() == ["failed"]
    assert any(e.startswith("Warning FailedDaemonPod") for e in fx.recorder.events)
    key = f"{fx.server_ds()['metadata']['uid']}/1/n"
    assert fx.dsc.failed_pods_backoff.get(key) == 1.0

    # The kubelet fails the replacement at once: within the backoff it stays.
    fx.observe()
    await fx.drain_queue()
    fx.reset()
    again = owned_pod(fx, "failed-again", "n")
    again["status"] = {"phase": "Failed"}
    fx.pod_informer.indexer.update(again)
    await fx.sync()
    assert fx.deleted_pods() == []
    assert not any("FailedDaemonPod" in e for e in fx.recorder.events)
    assert len(fx.dsc.controller.queue) == 0  # put back after the delay, not at once

    fx.clock.step(1.5)
    await asyncio.sleep(0)
    assert await fx.drain_queue() == ["default/foo"]
    await fx.sync()
    assert fx.deleted_pods() == ["failed-again"]
    assert fx.dsc.failed_pods_backoff.get(key) == 2.0


async def test_succeeded_pod_deleted_with_event() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    fx.add_ds(new_daemon_set())
    pod = owned_pod(fx, "done", "n")
    pod["status"] = {"phase": "Succeeded"}
    fx.pod_informer.indexer.update(pod)
    await fx.sync()
    assert fx.deleted_pods() == ["done"]
    assert any(e.startswith("Normal SucceededDaemonPod") for e in fx.recorder.events)


async def test_burst_limits_creations_and_expectations_hold_the_next_sync() -> None:
    fx = Fixture(burst_replicas=2)
    fx.add_nodes(5)
    fx.add_ds(new_daemon_set())
    await fx.sync()
    assert len(fx.created_pods()) == 2
    fx.reset()
    await fx.sync()  # the two creations were not observed yet
    assert fx.created_pods() == []
    # The counts are written, but this generation's work is not claimed as observed.
    assert "observedGeneration" not in fx.status_updates()[0]
    fx.observe()
    fx.reset()
    await fx.sync()
    assert len(fx.created_pods()) == 2


async def test_slow_start_stops_after_a_failed_batch() -> None:
    fx = Fixture()
    fx.add_nodes(10)
    fx.add_ds(new_daemon_set())
    calls = 0

    def refuse(action: Action) -> None:
        nonlocal calls
        calls += 1
        if calls >= 2:
            raise Forbidden("exceeded quota")

    fx.client.prepend_reactor("create", "pods", refuse)
    with pytest.raises(ExceptionGroup):
        await fx.sync()
    # Batches 1 then 2 (which fails): 3 attempts, 7 never tried.
    assert calls == 3
    expectations = fx.dsc.expectations.get_expectations("default/foo")
    assert expectations is not None and expectations.add == 1  # the one that succeeded
    assert sum(e.startswith("Warning FailedCreate") for e in fx.recorder.events) == 2


async def test_empty_selector_selects_nothing_and_warns() -> None:
    fx = Fixture()
    fx.add_nodes(2)
    ds = new_daemon_set()
    ds["spec"]["selector"] = {}
    fx.add_ds(ds)
    await fx.sync()
    assert fx.created_pods() == [] and fx.status_updates() == []
    assert fx.recorder.events == [
        "Warning SelectingAll This daemon set is selecting all pods."
        " A non-empty selector is required."
    ]


async def test_daemon_set_being_deleted_is_left_alone() -> None:
    fx = Fixture()
    fx.add_nodes(2)
    ds = new_daemon_set()
    ds["metadata"]["deletionTimestamp"] = "2026-11-28T12:00:00Z"
    ds["metadata"]["finalizers"] = ["foregroundDeletion"]
    fx.add_ds(ds)
    await fx.sync()
    assert [a for a in fx.client.actions if a.verb != "get"] == []


async def test_deleted_daemon_set_forgets_expectations() -> None:
    fx = Fixture()
    fx.add_nodes(2)
    ds = fx.add_ds(new_daemon_set())
    await fx.sync()
    assert fx.dsc.expectations.get_expectations("default/foo") is not None
    fx.ds_informer.indexer.delete(ds)
    fx.dsc.delete_daemon_set(ds)
    assert fx.dsc.expectations.get_expectations("default/foo") is None
    assert await fx.sync() is None


@pytest.mark.parametrize(
    ("old_ready", "new_available", "deleted"),
    [
        (True, False, []),  # the old pod serves until the new one is available
        (True, True, ["old"]),
        (False, False, ["old"]),  # an unready old pod serves nothing
    ],
    ids=["keep-both", "new-available", "old-unready"],
)
async def test_surge_node_with_old_and_new_pod(
    old_ready: bool, new_available: bool, deleted: list[str]
) -> None:
    """upstream TestSurgePreservesOldReadyWithUnsatisfiedMinReady and neighbours."""
    fx = Fixture()
    fx.add_node(new_node("n"))
    ds = new_daemon_set(strategy=surge(1))
    ds["spec"]["minReadySeconds"] = 30
    fx.add_ds(ds)
    await fx.sync_and_observe()  # records the revision, creates the node's pod
    (created,) = fx.server_pods()
    current = created["metadata"]["labels"]["controller-revision-hash"]
    fx.client.tracker.delete(PODS, created["metadata"]["name"], namespace="default")
    fx.observe()
    old = owned_pod(fx, "old", "n", created=NOW - timedelta(hours=1))
    if not old_ready:
        old["status"]["conditions"][0]["status"] = "False"
        fx.pod_informer.indexer.update(old)
    new = owned_pod(fx, "new", "n", created=NOW - timedelta(minutes=1))
    new["metadata"]["labels"]["controller-revision-hash"] = current
    since = NOW - timedelta(minutes=1) if new_available else NOW
    new["status"]["conditions"][0]["lastTransitionTime"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    fx.pod_informer.indexer.update(new)
    fx.reset()
    await fx.sync()
    assert fx.deleted_pods() == deleted


async def test_surge_third_pod_on_a_node_is_deleted() -> None:
    fx = Fixture()
    fx.add_node(new_node("n"))
    fx.add_ds(new_daemon_set(strategy=surge(1)))
    for i, name in enumerate(("a", "b", "c")):
        owned_pod(fx, name, "n", created=NOW - timedelta(minutes=10 - i))
    await fx.sync()
    # All three are old: the oldest old one stays; the others go.
    assert fx.deleted_pods() == ["b", "c"]


async def test_terminal_pods_being_deleted_are_ignored() -> None:
    """upstream TestGetNodesToDaemonPods: a failed pod held by a finalizer is not the node's
    pod, so the node gets a new one."""
    fx = Fixture()
    fx.add_node(new_node("n"))
    fx.add_ds(new_daemon_set())
    held = owned_pod(fx, "held", "n")
    held["status"] = {"phase": "Failed"}
    held["metadata"]["deletionTimestamp"] = "2026-11-28T11:00:00Z"
    fx.pod_informer.indexer.update(held)
    await fx.sync()
    assert fx.created_nodes() == ["n"]
    assert fx.deleted_pods() == []


async def test_sync_waits_for_the_cache_to_see_its_own_writes() -> None:
    """StaleControllerConsistencyDaemonSet: after creating pods, the next sync waits until
    the pod informer has caught up with them (and then goes ahead)."""
    seen = {"pods": ""}
    consistency = ConsistencyStore({PODS: lambda: seen["pods"]})
    fx = Fixture(consistency=consistency)
    fx.add_nodes(2)
    fx.add_ds(new_daemon_set())
    await fx.sync_and_observe()
    written = max(int(p["metadata"]["resourceVersion"]) for p in fx.server_pods())
    seen["pods"] = str(written - 1)
    fx.reset()
    with pytest.raises(StaleCache):  # the runner retries it
        await fx.sync()
    assert fx.client.actions == []
    skipped = fx.registry.get_sample_value(
        "daemonset_controller_stale_sync_skips_total", {"group": "", "resource": "pods"}
    )
    assert skipped == 1
    seen["pods"] = str(written)
    assert await fx.sync() is None


async def test_a_status_the_next_sync_supersedes_is_left_out_never_twice_in_a_row() -> None:
    """A sync whose DaemonSet was queued again while it ran leaves its status to the sync
    that follows at once (which counts from newer pods), but never twice in a row; the
    syncs run as the runner's workers run them (kcontrol.controller.superseded)."""
    fx = Fixture()
    fx.add_nodes(3)
    key = "default/foo"
    fx.add_ds(new_daemon_set())
    controller = fx.dsc.controller

    await sync_as_worker(controller, key, event_during=True)
    assert len(fx.created_pods()) == 3
    assert fx.status_updates() == [], "the counts are left to the sync that follows"
    fx.observe()

    await sync_as_worker(controller, key, event_during=True)  # the round that follows
    assert [s["currentNumberScheduled"] for s in fx.status_updates()] == [3], (
        "not left out twice in a row"
    )
    fx.observe()
    fx.reset()

    await sync_as_worker(controller, key)
    assert fx.status_updates() == [], "the status written is current"
