"""New member pods, their revision label, and the pod control's events (upstream
TestNewPodControllerRef, the revision choice of newVersionedStatefulSetPod, and the events
stateful_pod_control_test counts)."""

from __future__ import annotations

from typing import Any

import pytest
from statefulset_fixtures import new_stateful_set

from kcontrol.client import Object
from kcontrol.controller import get_controller_of
from kcontrol_controllers.statefulset import POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL
from kcontrol_controllers.statefulset._identity import identity_matches
from kcontrol_controllers.statefulset._pods import (
    claim_event,
    conflicting_controller_event,
    get_pod_revision,
    new_stateful_set_pod,
    new_versioned_stateful_set_pod,
    pod_event,
    set_pod_revision,
)
from kcontrol_controllers.statefulset._storage import storage_matches


def test_new_pod_controller_ref() -> None:
    set_ = new_stateful_set(1)
    pod = new_stateful_set_pod(set_, 0)
    assert get_controller_of(pod) == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "foo",
        "uid": "test",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_new_stateful_set_pod() -> None:
    set_ = new_stateful_set(3)
    set_["spec"]["template"]["metadata"]["annotations"] = {"a": "b"}
    pod = new_stateful_set_pod(set_, 2)
    assert pod["metadata"]["name"] == "foo-2"
    assert pod["metadata"]["generateName"] == "foo-"
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["labels"] == {
        "foo": "bar",
        POD_NAME_LABEL: "foo-2",
        POD_INDEX_LABEL: "2",
    }
    assert pod["metadata"]["annotations"] == {"a": "b"}
    assert pod["spec"]["hostname"] == "foo-2"
    assert pod["spec"]["subdomain"] == "governingsvc"
    assert pod["spec"]["volumes"] == [
        {"name": "datadir", "persistentVolumeClaim": {"claimName": "datadir-foo-2"}},
        {"name": "home", "hostPath": {"path": "/tmp/home"}},
    ]
    assert identity_matches(set_, pod) and storage_matches(set_, pod)
    assert "status" not in pod


def test_new_stateful_set_pod_leaves_the_set_alone() -> None:
    set_ = new_stateful_set(3)
    pod = new_stateful_set_pod(set_, 1)
    pod["spec"]["containers"][0]["image"] = "changed"
    pod["metadata"]["labels"]["x"] = "y"
    template = set_["spec"]["template"]
    assert template["spec"]["containers"][0]["image"] == "nginx"
    assert template["metadata"]["labels"] == {"foo": "bar"}
    assert template["spec"]["volumes"] == [{"name": "home", "hostPath": {"path": "/tmp/home"}}]


def test_pod_revision_label() -> None:
    pod: Object = {"metadata": {"name": "foo-0"}}
    assert get_pod_revision(pod) == ""
    set_pod_revision(pod, "foo-abc")
    assert pod["metadata"]["labels"] == {REVISION_LABEL: "foo-abc"}
    assert get_pod_revision(pod) == "foo-abc"


def _versioned_sets(
    strategy: dict[str, Any], current_replicas: int = 0, start: int | None = None
) -> tuple[Object, Object]:
    current = new_stateful_set(5)
    current["spec"]["updateStrategy"] = strategy
    current["status"] = {"currentReplicas": current_replicas}
    if start is not None:
        current["spec"]["ordinals"] = {"start": start}
    update = new_stateful_set(5)
    update["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    update["spec"]["updateStrategy"] = strategy
    return current, update


@pytest.mark.parametrize(
    ("strategy", "current_replicas", "start", "current_ordinals"),
    [
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            0,
            None,
            {0, 1},
            id="below the partition",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            0,
            3,
            {3, 4},
            id="partition counted from the start ordinal",
        ),
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {}}, 4, None, set(), id="partition 0"
        ),
        pytest.param({"type": "RollingUpdate"}, 3, None, {0, 1, 2}, id="no block: currentReplicas"),
        pytest.param({"type": "RollingUpdate"}, 3, 2, {2, 3, 4}, id="no block, start 2"),
        pytest.param({"type": "OnDelete"}, 3, None, set(), id="OnDelete: the update revision"),
        pytest.param(
            {"type": "OnDelete", "rollingUpdate": {"partition": 2}},
            0,
            None,
            {0, 1},
            id="Go precedence: a partition counts whatever the type",
        ),
    ],
)
def test_new_versioned_stateful_set_pod(
    strategy: dict[str, Any], current_replicas: int, start: int | None, current_ordinals: set[int]
) -> None:
    current, update = _versioned_sets(strategy, current_replicas, start)
    first = start or 0
    for ordinal in range(first, first + 6):
        pod = new_versioned_stateful_set_pod(current, update, "rev-current", "rev-update", ordinal)
        image = pod["spec"]["containers"][0]["image"]
        if ordinal in current_ordinals:
            assert (get_pod_revision(pod), image) == ("rev-current", "nginx"), ordinal
        else:
            assert (get_pod_revision(pod), image) == ("rev-update", "nginx:2"), ordinal
        assert pod["metadata"]["name"] == f"foo-{ordinal}"


POD = {"metadata": {"name": "foo-0"}}
SET = {"metadata": {"name": "foo"}}
CLAIM = {"metadata": {"name": "datadir-foo-0"}}


@pytest.mark.parametrize(
    ("verb", "error", "expected"),
    [
        (
            "create",
            None,
            ("Normal", "SuccessfulCreate", "create Pod foo-0 in StatefulSet foo successful"),
        ),
        (
            "update",
            None,
            ("Normal", "SuccessfulUpdate", "update Pod foo-0 in StatefulSet foo successful"),
        ),
        (
            "delete",
            RuntimeError("API server down"),
            (
                "Warning",
                "FailedDelete",
                "delete Pod foo-0 in StatefulSet foo failed error: API server down",
            ),
        ),
    ],
)
def test_pod_event(verb: str, error: Exception | None, expected: tuple[str, str, str]) -> None:
    assert pod_event(verb, SET, POD, error) == expected


def test_claim_event() -> None:
    assert claim_event("create", SET, POD, CLAIM, None) == (
        "Normal",
        "SuccessfulCreate",
        "create Claim datadir-foo-0 Pod foo-0 in StatefulSet foo success",
    )
    assert claim_event("create", SET, POD, CLAIM, RuntimeError("boom")) == (
        "Warning",
        "FailedCreate",
        "create Claim datadir-foo-0 for Pod foo-0 in StatefulSet foo failed error: boom",
    )


def test_conflicting_controller_event() -> None:
    event_type, reason, message = conflicting_controller_event("datadir-foo-0")
    assert (event_type, reason) == ("Warning", "ConflictingController")
    assert message.startswith("PersistentVolumeClaim datadir-foo-0 has a conflicting")
