"""Event handlers, after upstream daemon_controller_test.go: which DaemonSets node, pod and
revision events queue, and the expectations they keep."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from daemonset_fixtures import (
    NO_SCHEDULE_TAINTS,
    SIMPLE_DAEMON_SET_LABEL,
    SIMPLE_DAEMON_SET_LABEL2,
    Fixture,
    daemon_pod,
    mark_pod_ready,
    new_daemon_set,
    new_node,
)

from kcontrol_controllers.daemonset._controller import should_ignore_node_update


def owned(pod: dict[str, Any], ds: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": ds["metadata"]["name"],
            "uid": ds["metadata"]["uid"],
            "controller": True,
        }
    ]
    pod["metadata"]["resourceVersion"] = "1"
    return pod


async def two_daemon_sets() -> Fixture:
    fx = Fixture()
    fx.add_ds(new_daemon_set("foo"))
    fx.add_ds(new_daemon_set("blue", nodeSelector={"color": "blue"}))
    await fx.drain_queue()
    return fx


async def test_node_added_queues_only_daemon_sets_that_should_run_there() -> None:
    fx = await two_daemon_sets()
    fx.dsc.add_node(new_node("plain"))
    assert await fx.drain_queue() == ["default/foo"]
    fx.dsc.add_node(new_node("b", {"color": "blue"}))
    assert sorted(await fx.drain_queue()) == ["default/blue", "default/foo"]
    fx.dsc.add_node(new_node("tainted", taints=NO_SCHEDULE_TAINTS))
    assert await fx.drain_queue() == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda n: n["status"].update(conditions=[{"type": "Ready", "status": "False"}]), []),
        (lambda n: n["metadata"].update(resourceVersion="9"), []),
        (lambda n: n["metadata"].update(labels={"color": "blue"}), ["default/blue"]),
        (lambda n: n["metadata"].update(labels={"other": "x"}), []),  # no placement changes
        (lambda n: n["spec"].update(taints=NO_SCHEDULE_TAINTS), ["default/foo"]),
    ],
    ids=["heartbeat", "resource-version", "label-selects", "label-irrelevant", "taint"],
)
async def test_node_update_queues_when_placement_changes(change: Any, expected: list[str]) -> None:
    fx = await two_daemon_sets()
    old = new_node("n")
    cur = copy.deepcopy(old)
    change(cur)
    fx.dsc.update_node(old, cur)
    assert sorted(await fx.drain_queue()) == expected


def test_should_ignore_node_update() -> None:
    old = new_node("n", {"a": "b"})
    cur = copy.deepcopy(old)
    cur["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert should_ignore_node_update(old, cur)
    cur["spec"]["taints"] = NO_SCHEDULE_TAINTS
    assert not should_ignore_node_update(old, cur)


async def test_node_deleted_queues_daemon_sets_that_ran_there() -> None:
    fx = await two_daemon_sets()
    fx.dsc.delete_node(new_node("plain"))
    assert await fx.drain_queue() == ["default/foo"]


async def test_pod_added_observes_creation_of_its_owner() -> None:
    fx = await two_daemon_sets()
    ds = fx.server_ds("foo")
    fx.dsc.expectations.set_expectations("default/foo", 1, 0)
    fx.dsc.add_pod(owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), ds))
    assert fx.dsc.expectations.satisfied_expectations("default/foo")
    assert await fx.drain_queue() == ["default/foo"]


async def test_orphan_pod_added_queues_matching_daemon_sets_without_observing() -> None:
    fx = await two_daemon_sets()
    fx.dsc.expectations.set_expectations("default/foo", 1, 0)
    fx.dsc.add_pod(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL))
    assert not fx.dsc.expectations.satisfied_expectations("default/foo")
    assert sorted(await fx.drain_queue()) == ["default/blue", "default/foo"]
    fx.dsc.add_pod(daemon_pod("q", "n", {"unrelated": "x"}))
    assert await fx.drain_queue() == []


async def test_pod_deleted_and_terminating_observe_deletion() -> None:
    fx = await two_daemon_sets()
    ds = fx.server_ds("foo")
    fx.dsc.expectations.set_expectations("default/foo", 0, 2)
    pod = owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), ds)
    terminating = copy.deepcopy(pod)
    terminating["metadata"]["resourceVersion"] = "2"
    terminating["metadata"]["deletionTimestamp"] = "2026-11-28T12:00:00Z"
    fx.dsc.update_pod(pod, terminating)
    fx.dsc.delete_pod(owned(daemon_pod("q", "n", SIMPLE_DAEMON_SET_LABEL), ds))
    assert fx.dsc.expectations.satisfied_expectations("default/foo")
    assert await fx.drain_queue() == ["default/foo"]


async def test_pod_update_same_resource_version_ignored() -> None:
    fx = await two_daemon_sets()
    pod = owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), fx.server_ds("foo"))
    fx.dsc.update_pod(pod, copy.deepcopy(pod))
    assert await fx.drain_queue() == []


async def test_pod_changing_owner_queues_both() -> None:
    fx = await two_daemon_sets()
    old = owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), fx.server_ds("foo"))
    cur = owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), fx.server_ds("blue"))
    cur["metadata"]["resourceVersion"] = "2"
    fx.dsc.update_pod(old, cur)
    assert sorted(await fx.drain_queue()) == ["default/blue", "default/foo"]


async def test_orphan_pod_relabelled_queues_matching() -> None:
    fx = await two_daemon_sets()
    old = daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL2)
    old["metadata"]["resourceVersion"] = "1"
    cur = copy.deepcopy(old)
    cur["metadata"]["labels"] = dict(SIMPLE_DAEMON_SET_LABEL)
    cur["metadata"]["resourceVersion"] = "2"
    fx.dsc.update_pod(old, cur)
    assert sorted(await fx.drain_queue()) == ["default/blue", "default/foo"]


async def test_pod_becoming_ready_requeues_after_min_ready_seconds() -> None:
    fx = Fixture()
    ds = new_daemon_set()
    ds["spec"]["minReadySeconds"] = 10
    ds = fx.add_ds(ds)
    old = owned(daemon_pod("p", "n", SIMPLE_DAEMON_SET_LABEL), ds)
    cur = mark_pod_ready(copy.deepcopy(old))
    cur["metadata"]["resourceVersion"] = "2"
    fx.dsc.update_pod(old, cur)
    assert await fx.drain_queue() == ["default/foo"]
    fx.clock.step(10.5)
    assert await fx.drain_queue() == []
    fx.clock.step(1)
    assert await fx.drain_queue() == ["default/foo"]


async def test_daemon_set_deleted_drops_expectations_and_queues() -> None:
    fx = await two_daemon_sets()
    ds = fx.server_ds("foo")
    fx.dsc.expectations.set_expectations("default/foo", 3, 0)
    fx.dsc.delete_daemon_set(ds)
    assert fx.dsc.expectations.get_expectations("default/foo") is None
    assert await fx.drain_queue() == ["default/foo"]


async def test_daemon_set_recreated_under_the_same_name() -> None:
    fx = await two_daemon_sets()
    old = fx.server_ds("foo")
    cur = copy.deepcopy(old)
    cur["metadata"]["uid"] = "another"
    fx.dsc.expectations.set_expectations("default/foo", 3, 0)
    fx.dsc.update_daemon_set(old, cur)
    assert fx.dsc.expectations.get_expectations("default/foo") is None
    assert await fx.drain_queue() == ["default/foo"]


async def test_orphan_revision_added_queues_matching_owned_one_does_not() -> None:
    fx = await two_daemon_sets()
    revision: dict[str, Any] = {
        "metadata": {"name": "r", "namespace": "default", "labels": dict(SIMPLE_DAEMON_SET_LABEL)}
    }
    fx.dsc.add_history(revision)
    assert sorted(await fx.drain_queue()) == ["default/blue", "default/foo"]
    ds = fx.server_ds("foo")
    owned_revision = owned(copy.deepcopy(revision), ds)
    fx.dsc.add_history(owned_revision)
    assert await fx.drain_queue() == []
    fx.dsc.delete_history(owned_revision)
    assert await fx.drain_queue() == ["default/foo"]
