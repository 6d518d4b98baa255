"""kcontrol_controllers.podutil (shared with the Deployment controller; tested here, next to its
first user): pod predicates, availability timing, the controller index, pods from
templates (upstream TestActivePodFiltering, TestCountTerminatingPods, TestClaimedPodFiltering,
TestNextPodAvailabilityCheck, TestFindMinNextPodAvailability*, TestFilterPodsByOwner,
GetPodFromTemplate)."""

from __future__ import annotations

import copy
import inspect
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kcontrol.client import Object
from kcontrol.informers import IndexedStore
from kcontrol.labels import selector_from_set
from kcontrol_controllers import podutil
from kcontrol_controllers.podutil import (
    POD_CONTROLLER_INDEX,
    filter_active_pods,
    filter_claimed_pods,
    filter_pods_by_owner,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
    is_pod_available,
    is_pod_ready,
    next_pod_availability_check,
    pod_controller_index_func,
    pod_from_template,
    pod_key,
    pods_generate_name,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
OWNER = {"metadata": {"name": "rs", "namespace": "ns", "uid": "owner-uid"}}


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str = "p",
    phase: str = "Running",
    *,
    ready: bool | None = None,
    ready_ago: float | None = None,
    deleting: bool = False,
    owner_uid: str | None = None,
    owner_kind: str = "ReplicaSet",
    labels: dict[str, str] | None = None,
    namespace: str = "ns",
) -> Object:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {"a": "b"}}
    if deleting:
        meta["deletionTimestamp"] = ts(NOW)
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"kind": owner_kind, "name": "rs", "uid": owner_uid, "controller": True}
        ]
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        condition: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
        if ready_ago is not None:
            condition["lastTransitionTime"] = ts(NOW - timedelta(seconds=ready_ago))
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}, condition]
    return {"metadata": meta, "spec": {}, "status": status}


def test_public_surface() -> None:
    """Everything the module defines publicly is exported, documented, and nothing else."""
    defined = {
        name
        for name, value in vars(podutil).items()
        if not name.startswith("_")
        and (
            (inspect.isfunction(value) and value.__module__ == podutil.__name__)
            or (name.isupper() and isinstance(value, str))
        )
    }
    assert sorted(podutil.__all__) == sorted(defined)
    for name in podutil.__all__:
        value = getattr(podutil, name)
        assert isinstance(value, str) or value.__doc__, name


@pytest.mark.parametrize(
    ("case", "active", "terminating"),
    [
        (pod(phase="Pending"), True, False),
        (pod(phase="Running"), True, False),
        (pod(phase="Unknown"), True, False),
        (pod(phase="Succeeded"), False, False),
        (pod(phase="Failed"), False, False),
        (pod(phase="Running", deleting=True), False, True),
        (pod(phase="Pending", deleting=True), False, True),
        (pod(phase="Failed", deleting=True), False, False),
        (pod(phase="Succeeded", deleting=True), False, False),
    ],
    ids=[
        "pending",
        "running",
        "unknown",
        "succeeded",
        "failed",
        "running, deleting",
        "pending, deleting",
        "failed, deleting",
        "succeeded, deleting",
    ],
)
def test_active_and_terminating(case: Object, active: bool, terminating: bool) -> None:
    assert filter_active_pods([case]) == ([case] if active else [])
    assert filter_terminating_pods([case]) == ([case] if terminating else [])


def test_filter_claimed_pods() -> None:
    mine = pod("mine", owner_uid="owner-uid")
    relabelled = pod("relabelled", owner_uid="owner-uid", labels={"other": "x"})
    theirs = pod("theirs", owner_uid="someone-else")
    orphan = pod("orphan")
    selected = filter_claimed_pods(
        OWNER, selector_from_set({"a": "b"}), [mine, relabelled, theirs, orphan]
    )
    assert selected == [mine]


@pytest.mark.parametrize(
    ("case", "ready", "available_after_10s"),
    [
        (pod(), False, False),
        (pod(ready=False, ready_ago=100), False, False),
        (pod(ready=True), True, False),
        (pod(ready=True, ready_ago=9), True, False),
        # exactly minReadySeconds: available (1.36 compares with <=, older releases with <)
        (pod(ready=True, ready_ago=10), True, True),
        (pod(ready=True, ready_ago=11), True, True),
    ],
    ids=["no condition", "not ready", "ready, no time", "ready 9s", "ready 10s", "ready 11s"],
)
def test_ready_and_available(case: Object, ready: bool, available_after_10s: bool) -> None:
    assert is_pod_ready(case) is ready
    assert is_pod_available(case, 10, NOW) is available_after_10s
    assert is_pod_available(case, 0, NOW) is ready  # no minReadySeconds: ready is available


@pytest.mark.parametrize(
    ("case", "min_ready", "expected"),
    [
        (pod(ready=False, ready_ago=0), 0, None),
        (pod(ready=True, ready_ago=0), 0, None),
        (pod(ready=True), 1, None),
        (pod(ready=True, ready_ago=0), 1, 1.0),
        (pod(ready=True, ready_ago=20), 30, 10.0),
        (pod(ready=True, ready_ago=51), 50, None),
    ],
    ids=[
        "not ready",
        "no minReadySeconds",
        "no transition time",
        "just ready: in 1s",
        "ready for 20s: in 10s",
        "available",
    ],
)
def test_next_pod_availability_check(case: Object, min_ready: int, expected: float | None) -> None:
    assert next_pod_availability_check(case, min_ready, NOW) == expected


MIXED = [
    pod("pod1", ready=False, ready_ago=0),
    pod("pod2", ready=True, ready_ago=2),
    pod("pod3", ready=True, ready_ago=0),
    pod("pod4", ready=True, ready_ago=4),
    pod("pod5", ready=False, ready_ago=0),
]


@pytest.mark.parametrize(
    ("pods", "min_ready", "delay_since_evaluation", "expected"),
    [
        ([], 0, 0, None),
        (MIXED, 0, 0, None),
        (MIXED, 10, 0, 6.0),
        (MIXED, 10, 2, 4.0),
        (MIXED, 10, 7, 0.0),
        ([pod(ready=True, ready_ago=15), pod(ready=True, ready_ago=10)], 10, 0, None),
    ],
    ids=[
        "no pods",
        "no minReadySeconds",
        "earliest is pod4, in 6s",
        "status evaluated 2s ago: 4s left",
        "already due since the evaluation: now",
        "all available",
    ],
)
def test_find_min_next_pod_availability_check(
    pods: list[Object], min_ready: int, delay_since_evaluation: float, expected: float | None
) -> None:
    later = NOW + timedelta(seconds=delay_since_evaluation)
    assert find_min_next_pod_availability_check(pods, min_ready, NOW, later) == expected


def test_filter_pods_by_owner_uses_the_controller_index() -> None:
    store = IndexedStore(indexers={POD_CONTROLLER_INDEX: pod_controller_index_func})
    owned = pod("owned", owner_uid="owner-uid")
    orphan = pod("orphan")
    other_owner = pod("other", owner_uid="someone-else")
    other_kind = pod("stateful", owner_uid="owner-uid", owner_kind="StatefulSet")
    elsewhere = pod("orphan-elsewhere", namespace="other-ns")
    for p in (owned, orphan, other_owner, other_kind, elsewhere):
        store.add(p)

    assert filter_pods_by_owner(store, OWNER, "ReplicaSet", include_orphans=False) == [owned]
    found = filter_pods_by_owner(store, OWNER, "ReplicaSet", include_orphans=True)
    assert [p["metadata"]["name"] for p in found] == ["owned", "orphan"]
    with pytest.raises(ValueError, match="uid"):
        filter_pods_by_owner(
            store,
            {"metadata": {"name": "x", "namespace": "ns"}},
            "ReplicaSet",
            include_orphans=True,
        )


def test_pod_from_template_copies_and_owns() -> None:
    template = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"a": "1"},
            "finalizers": ["f"],
            "name": "ignored",
        },
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    parent = {"metadata": {"name": "web-123", "namespace": "ns", "uid": "u"}}
    ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-123",
        "uid": "u",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    snapshot = copy.deepcopy(template)

    created = pod_from_template(template, parent, ref)

    assert created == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"a": "1"},
            "generateName": "web-123-",
            "finalizers": ["f"],
            "ownerReferences": [ref],
        },
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    created["spec"]["containers"][0]["image"] = "changed"
    created["metadata"]["labels"]["x"] = "y"
    assert template == snapshot


def test_pod_from_template_leaves_out_empty_fields() -> None:
    created = pod_from_template({"spec": {}}, {"metadata": {"name": "x"}}, None)
    assert created["metadata"] == {"generateName": "x-"}


def test_generate_name_drops_the_dash_when_too_long() -> None:
    assert pods_generate_name("a" * 252) == "a" * 252 + "-"
    assert pods_generate_name("a" * 253) == "a" * 253


def test_pod_key() -> None:
    assert pod_key(pod("p")) == "ns/p"
