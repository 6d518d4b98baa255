"""The event handlers: which ReplicaSet keys each informer event queues, and how they keep the
expectations current (upstream TestPodControllerLookup, TestUpdatePods, TestDeletionTimestamp,
TestDeleteFinalStateUnknown, TestOverlappingRSs, TestExpectationsOnRecreate)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from replicaset_fixtures import NS, Fixture, ago, controller_ref, new_pod, new_replica_set

from kcontrol.client import REPLICASETS, Object
from kcontrol.informers import DeletedFinalStateUnknown

RS1 = new_replica_set(1, {"foo": "bar"}, name="rs1", uid="uid-1")
RS2 = new_replica_set(1, {"bar": "foo"}, name="rs2", uid="uid-2")
MIN_READY = new_replica_set(1, {"min": "ready"}, name="slow", uid="uid-slow", min_ready_seconds=10)
OTHER_NS = dict(RS1, metadata={**RS1["metadata"], "namespace": "elsewhere", "name": "rs-else"})


def pod(
    rv: str = "1",
    *,
    labels: dict[str, str] | None = None,
    owner: Object | None = None,
    ready: bool = True,
    **meta: Any,
) -> Object:
    base = new_pod("pod", RS1, labels=labels or {"foo": "bar"}, owned=False, ready=ready, **meta)
    base["metadata"]["resourceVersion"] = rv
    if owner is not None:
        base["metadata"]["ownerReferences"] = [controller_ref(owner)]
    return base


def statefulset_pod() -> Object:
    """A pod controlled by a StatefulSet that has rs1's name and UID."""
    owned = pod(owner=RS1)
    owned["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    return owned


def fixture_with(*replica_sets: Object) -> Fixture:
    f = Fixture()
    for rs in replica_sets:
        f.cache_rs(rs)
    return f


# -- pod added -----------------------------------------------------------------------------------


@dataclass
class AddCase:
    name: str
    pod: Object
    queued: list[str]
    creations_observed: int = 0


ADD_CASES = [
    AddCase("owned pod: its controller, creation observed", pod(owner=RS2), ["default/rs2"], 1),
    AddCase("owner unknown", pod(owner=new_replica_set(name="gone", uid="x")), []),
    AddCase(
        "owner re-created under another uid",
        pod(owner=dict(RS1, metadata={**RS1["metadata"], "uid": "old"})),
        [],
    ),
    AddCase("controller of another kind", statefulset_pod(), []),
    AddCase(
        "orphan: every matching ReplicaSet",
        pod(labels={"foo": "bar", "bar": "foo"}),
        ["default/rs1", "default/rs2"],
    ),
    AddCase("orphan matching nothing", pod(labels={"no": "match"}), []),
    AddCase("orphan without labels", dict(pod(), metadata={**pod()["metadata"], "labels": {}}), []),
]


@pytest.mark.parametrize("case", ADD_CASES, ids=lambda c: c.name)
async def test_add_pod(case: AddCase) -> None:
    f = fixture_with(RS1, RS2, OTHER_NS)
    for rs in (RS1, RS2):
        f.rsc.expectations.expect_creations(f"{NS}/{rs['metadata']['name']}", 1)

    f.rsc.add_pod(case.pod)

    assert sorted(await f.drain_queue()) == case.queued
    observed = sum(
        1 - e.add
        for key in ("default/rs1", "default/rs2")
        if (e := f.rsc.expectations.get_expectations(key)) is not None
    )
    assert observed == case.creations_observed


async def test_orphans_are_not_offered_to_replica_sets_with_an_empty_selector() -> None:
    everything = new_replica_set(1, {}, name="all", uid="all")
    f = fixture_with(everything)
    f.rsc.add_pod(pod())
    assert await f.drain_queue() == []


async def test_add_of_a_terminating_pod_is_a_deletion_not_a_creation() -> None:
    f = fixture_with(RS1)
    key = "default/rs1"
    f.rsc.expectations.expect_deletions(key, [f"{NS}/pod"])
    f.rsc.expectations.raise_expectations(key, 1, 0)  # one creation pending as well

    f.rsc.add_pod(pod(owner=RS1, deletionTimestamp=ago(1)))

    assert await f.drain_queue() == [key]
    expectations = f.rsc.expectations.get_expectations(key)
    assert expectations is not None and (expectations.add, expectations.delete) == (1, 0)


async def test_a_pod_queues_only_its_own_replica_set_among_overlapping_ones() -> None:
    """Upstream TestOverlappingRSs: nine ReplicaSets select the pod; its controller
    reference picks one."""
    sets = [new_replica_set(1, name=f"rs{i}", uid=f"uid-{i}") for i in range(1, 10)]
    f = fixture_with(*sets)
    f.rsc.add_pod(pod(owner=sets[3]))
    assert await f.drain_queue() == ["default/rs4"]


# -- pod updated ---------------------------------------------------------------------------------


@dataclass
class UpdateCase:
    name: str
    old: Object
    cur: Object
    queued: list[str]
    delayed: dict[str, float] = field(default_factory=dict)


def changed(base: Object, **changes: Any) -> Object:
    new = copy.deepcopy(base)
    new["metadata"]["resourceVersion"] = "2"
    for key, value in changes.items():
        if key == "owner":
            new["metadata"]["ownerReferences"] = [controller_ref(value)] if value else []
        elif key == "ready":
            new["status"]["conditions"] = [{"type": "Ready", "status": str(value)}]
        else:
            new["metadata"][key] = value
    return new


def bound(base: Object) -> Object:
    """``base`` as the scheduler's binding leaves it: on a node, with PodScheduled."""
    new = changed(base)
    new["spec"]["nodeName"] = "node-1"
    new["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True"},
        *new["status"].get("conditions", []),
    ]
    return new


def with_status(base: Object, **status: Any) -> Object:
    new = changed(base)
    new["status"].update(status)
    return new


def ready_at(base: Object, when: str) -> Object:
    new = changed(base)
    new["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": when}]
    return new


UPDATE_CASES = [
    UpdateCase("resync (same resourceVersion)", pod(owner=RS1), pod(owner=RS1), []),
    # Departure from upstream (which queues every owned pod's update): only a change of what a
    # sync counts - phase, readiness, labels, owner - queues the controller.
    UpdateCase(
        "owned, bound to a node: nothing",
        pod(owner=RS1, ready=False),
        bound(pod(owner=RS1, ready=False)),
        [],
    ),
    UpdateCase(
        "owned, container statuses and IPs: nothing",
        pod(owner=RS1),
        with_status(pod(owner=RS1), podIP="10.0.0.1", containerStatuses=[{"name": "app"}]),
        [],
    ),
    UpdateCase(
        "owned, phase changed: its controller",
        pod(owner=RS1),
        with_status(pod(owner=RS1), phase="Failed"),
        ["default/rs1"],
    ),
    UpdateCase(
        "owned, ready again since another time: its controller",
        ready_at(pod(owner=RS1), "2026-01-01T00:00:00Z"),
        changed(ready_at(pod(owner=RS1), "2026-01-01T00:00:09Z"), resourceVersion="3"),
        ["default/rs1"],
    ),
    UpdateCase(
        "owned, labels changed: its controller only",
        pod(owner=RS1),
        changed(pod(owner=RS1), labels={"bar": "foo"}),
        ["default/rs1"],
    ),
    UpdateCase(
        "orphaned (controller reference removed): old owner and the matching ReplicaSet",
        pod(owner=RS1, labels={"bar": "foo"}),
        changed(pod(owner=RS1, labels={"bar": "foo"}), owner=None),
        ["default/rs1", "default/rs2"],
    ),
    UpdateCase(
        "controller changed: old and new owner",
        pod(owner=RS1),
        changed(pod(owner=RS1), owner=RS2),
        ["default/rs1", "default/rs2"],
    ),
    UpdateCase(
        "orphan relabelled: the newly matching ReplicaSet",
        pod(),
        changed(pod(), labels={"bar": "foo"}),
        ["default/rs2"],
    ),
    UpdateCase(
        "orphan, status change only: nothing",
        pod(ready=False),
        changed(pod(ready=False), ready=True),
        [],
    ),
    UpdateCase(
        "owned, became ready, minReadySeconds: now and after minReadySeconds",
        pod(owner=MIN_READY, ready=False),
        changed(pod(owner=MIN_READY, ready=False), ready=True),
        ["default/slow"],
        {"default/slow": 10.0},
    ),
    UpdateCase(
        "owned, became ready, no minReadySeconds: now only",
        pod(owner=RS1, ready=False),
        changed(pod(owner=RS1, ready=False), ready=True),
        ["default/rs1"],
    ),
    UpdateCase(
        "owned, stayed ready: no delayed check",
        pod(owner=MIN_READY),
        changed(pod(owner=MIN_READY), labels={"x": "y"}),
        ["default/slow"],
    ),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.name)
async def test_update_pod(case: UpdateCase) -> None:
    f = fixture_with(RS1, RS2, MIN_READY)

    f.rsc.update_pod(case.old, case.cur)

    assert sorted(await f.drain_queue()) == case.queued
    queue = f.rsc.controller.queue
    assert queue.waiting_len() == len(case.delayed)
    for key, delay in case.delayed.items():
        f.clock.step(delay - 0.001)
        assert await f.drain_queue() == []
        f.clock.step(0.001)
        assert await f.drain_queue() == [key]


async def test_update_to_terminating_observes_the_deletion_once() -> None:
    """Upstream TestDeletionTimestamp: the deletionTimestamp update is the deletion; the
    later delete of the same pod, or a second update, does not count again."""
    f = fixture_with(RS1)
    key = "default/rs1"
    second = new_pod("second", RS1)
    f.rsc.expectations.expect_deletions(key, [f"{NS}/pod", f"{NS}/second"])
    old = pod(owner=RS1)
    terminating = changed(old, deletionTimestamp=ago(1))

    f.rsc.update_pod(old, terminating)
    assert await f.drain_queue() == [key]
    assert f.rsc.expectations.get_uids(key) == {f"{NS}/second"}

    again = changed(terminating, resourceVersion="3")
    f.rsc.update_pod(terminating, again)
    f.rsc.delete_pod(again)
    expectations = f.rsc.expectations.get_expectations(key)
    assert expectations is not None and expectations.delete == 1

    f.rsc.delete_pod(second)
    expectations = f.rsc.expectations.get_expectations(key)
    assert expectations is not None and expectations.fulfilled()


async def test_terminating_pod_queues_again_only_when_it_reaches_a_terminal_phase() -> None:
    """Counted as terminating once: a later shortening of its grace period changes nothing
    a sync counts (departure from upstream, which queues it again); a terminal phase takes
    it out of ``terminatingReplicas`` and queues."""
    f = fixture_with(RS1)
    terminating = changed(pod(owner=RS1), deletionTimestamp=ago(30))
    shortened = changed(terminating, resourceVersion="3", deletionTimestamp=ago(1))

    f.rsc.update_pod(terminating, shortened)
    assert await f.drain_queue() == []

    f.rsc.update_pod(shortened, with_status(shortened, phase="Succeeded"))
    assert await f.drain_queue() == ["default/rs1"]


async def test_terminating_pod_that_changed_labels_notifies_both_owners() -> None:
    f = fixture_with(RS1, RS2)
    old = pod(owner=RS1)
    cur = changed(old, owner=RS2, labels={"bar": "foo"}, deletionTimestamp=ago(1))
    f.rsc.update_pod(old, cur)
    assert sorted(await f.drain_queue()) == ["default/rs1", "default/rs2"]


# -- pod deleted ---------------------------------------------------------------------------------


DELETE_SHAPES: list[tuple[str, Callable[[Object], Any]]] = [
    ("object", lambda p: p),
    ("tombstone", lambda p: DeletedFinalStateUnknown(f"{NS}/{p['metadata']['name']}", p)),
]


@pytest.mark.parametrize(("shape", "wrap"), DELETE_SHAPES, ids=[s for s, _ in DELETE_SHAPES])
async def test_delete_pod_observes_the_expected_deletion(
    shape: str, wrap: Callable[[Object], Any]
) -> None:
    f = fixture_with(RS1)
    key = "default/rs1"
    f.rsc.expectations.expect_deletions(key, [f"{NS}/pod"])

    f.rsc.delete_pod(wrap(pod(owner=RS1)))

    assert await f.drain_queue() == [key]
    expectations = f.rsc.expectations.get_expectations(key)
    assert expectations is not None and expectations.fulfilled()


async def test_delete_of_an_unexpected_pod_queues_without_observing() -> None:
    f = fixture_with(RS1)
    key = "default/rs1"
    f.rsc.expectations.expect_deletions(key, [f"{NS}/another"])
    f.rsc.delete_pod(pod(owner=RS1))
    assert await f.drain_queue() == [key]
    expectations = f.rsc.expectations.get_expectations(key)
    assert expectations is not None and expectations.delete == 1


@pytest.mark.parametrize(
    "deleted",
    [pod(), "not a pod", DeletedFinalStateUnknown("default/x", {"kind": "ConfigMap"})],
    ids=["orphan", "garbage", "tombstone of another kind"],
)
async def test_delete_pod_ignores(deleted: Any) -> None:
    f = fixture_with(RS1)
    f.rsc.delete_pod(deleted)
    assert await f.drain_queue() == []


# -- ReplicaSet events ---------------------------------------------------------------------------


async def test_added_and_updated_replica_sets_are_queued() -> None:
    f = Fixture()
    f.rsc.add_replica_set(RS1)
    assert await f.drain_queue() == ["default/rs1"]
    resynced = copy.deepcopy(RS1)
    f.rsc.update_replica_set(RS1, resynced)  # even a resync: a failed creation is retried
    assert await f.drain_queue() == ["default/rs1"]


@pytest.mark.parametrize(
    "wrap",
    [lambda rs: rs, lambda rs: DeletedFinalStateUnknown("default/rs1", rs)],
    ids=["object", "tombstone"],
)
async def test_deleted_replica_set_drops_its_expectations(wrap: Callable[[Object], Any]) -> None:
    f = Fixture()
    f.rsc.expectations.expect_creations("default/rs1", 3)
    f.rsc.delete_replica_set(wrap(RS1))
    assert f.rsc.expectations.get_expectations("default/rs1") is None
    assert await f.drain_queue() == ["default/rs1"]


async def test_own_status_write_coming_back_is_not_queued() -> None:
    """The controller's own status write, seen by the informer, brings nothing its sync did
    not know (departure from upstream, which queues every update); another writer's status
    change after it queues (and so does the write a held-back sync waits for: see
    tests/controller/test_consistency.py)."""
    f = Fixture()
    old = dict(RS1, metadata={**RS1["metadata"], "resourceVersion": "4"})
    written = dict(old, metadata={**old["metadata"], "resourceVersion": "5"}, status={"x": 1})
    f.rsc.consistency.wrote_at("default/rs1", "uid-1", REPLICASETS, "5", namespace=NS)

    f.rsc.update_replica_set(old, written)
    assert await f.drain_queue() == []

    foreign = dict(written, metadata={**written["metadata"], "resourceVersion": "6"})
    f.rsc.update_replica_set(written, foreign)
    assert await f.drain_queue() == ["default/rs1"]


async def test_recreated_replica_set_starts_with_clean_expectations() -> None:
    """An update that shows another UID under the same name is a delete and an add."""
    f = Fixture()
    f.rsc.expectations.expect_creations("default/rs1", 3)
    recreated = dict(RS1, metadata={**RS1["metadata"], "uid": "new-uid"})
    f.rsc.update_replica_set(RS1, recreated)
    assert f.rsc.expectations.get_expectations("default/rs1") is None
    assert await f.drain_queue() == ["default/rs1"]
