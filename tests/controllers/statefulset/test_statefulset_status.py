"""The status a sync computes, completing a rolling update, and whether to write it
(upstream computeReplicaStatus / updateStatus, completeRollingUpdate, inconsistentStatus)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from statefulset_fixtures import NOW, make_running, new_stateful_set, terminate

from kcontrol.client import Object
from kcontrol_controllers.statefulset._pods import new_stateful_set_pod, set_pod_revision
from kcontrol_controllers.statefulset._status import (
    complete_rolling_update,
    decides_next_pass,
    inconsistent_status,
    new_status,
    replica_counts,
    update_replica_counts,
)


def pod(ordinal: int, revision: str, state: str) -> Object:
    result = new_stateful_set_pod(new_stateful_set(5), ordinal)
    set_pod_revision(result, revision)
    if state == "available":
        make_running(result)
    elif state == "ready 5s":
        make_running(result, ready_for=timedelta(seconds=5))
    elif state == "not ready":
        make_running(result, ready=False)
    elif state == "terminating":
        terminate(make_running(result))
    return result  # "not created": no status at all


def test_replica_counts() -> None:
    pods = [
        pod(0, "cur", "available"),
        pod(1, "cur", "ready 5s"),
        pod(2, "upd", "not ready"),
        pod(3, "upd", "terminating"),
        pod(4, "upd", "not created"),
    ]
    assert replica_counts(pods, 10, "cur", "upd", NOW) == {
        "replicas": 4,  # the pod not created is not counted
        "readyReplicas": 3,  # the terminating pod is still ready
        "availableReplicas": 2,
        "currentReplicas": 2,
        "updatedReplicas": 1,  # neither terminating nor uncreated pods count
    }


def test_replica_counts_when_both_revisions_are_one() -> None:
    pods = [pod(0, "rev", "available"), pod(1, "rev", "available")]
    counts = replica_counts(pods, 0, "rev", "rev", NOW)
    assert counts["currentReplicas"] == counts["updatedReplicas"] == 2


def test_update_replica_counts_adds_the_lists() -> None:
    set_ = new_stateful_set(3)
    set_["metadata"]["generation"] = 7
    status = new_status(set_, "cur", "upd", 2)
    update_replica_counts(
        status, 0, NOW, [pod(0, "cur", "available")], [pod(5, "upd", "available")]
    )
    assert status == {
        "observedGeneration": 7,
        "currentRevision": "cur",
        "updateRevision": "upd",
        "collisionCount": 2,
        "replicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "currentReplicas": 1,
        "updatedReplicas": 1,
    }


def _status(replicas: int, ready: int, updated: int, current: int = 0) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "currentReplicas": current,
        "currentRevision": "cur",
        "updateRevision": "upd",
    }


@pytest.mark.parametrize(
    ("strategy", "status", "completed"),
    [
        pytest.param("RollingUpdate", _status(3, 3, 3), True, id="done"),
        pytest.param("RollingUpdate", _status(3, 2, 3), False, id="not all ready"),
        pytest.param("RollingUpdate", _status(3, 3, 2), False, id="not all updated"),
        pytest.param("RollingUpdate", _status(4, 3, 3), False, id="an extra replica"),
        pytest.param("OnDelete", _status(3, 3, 3), False, id="OnDelete never completes"),
    ],
)
def test_complete_rolling_update(strategy: str, status: dict[str, Any], completed: bool) -> None:
    set_ = new_stateful_set(3)
    set_["spec"]["updateStrategy"] = {"type": strategy}
    complete_rolling_update(set_, status)
    if completed:
        assert (status["currentRevision"], status["currentReplicas"]) == ("upd", 3)
    else:
        assert (status["currentRevision"], status["currentReplicas"]) == ("cur", 0)


SET_STATUS = {
    "observedGeneration": 2,
    "replicas": 3,
    "readyReplicas": 3,
    "availableReplicas": 3,
    "currentReplicas": 3,
    "updatedReplicas": 3,
    "currentRevision": "cur",
    "updateRevision": "cur",
    "collisionCount": 0,
}


@pytest.mark.parametrize(
    ("change", "inconsistent"),
    [
        ({}, False),
        ({"observedGeneration": 3}, True),
        ({"observedGeneration": 1}, False),  # an older generation is not written
        ({"replicas": 2}, True),
        ({"readyReplicas": 2}, True),
        ({"availableReplicas": 2}, True),
        ({"currentReplicas": 2}, True),
        ({"updatedReplicas": 2}, True),
        ({"currentRevision": "x"}, True),
        ({"updateRevision": "x"}, True),
        ({"collisionCount": 1}, False),  # not compared, as upstream
    ],
)
def test_inconsistent_status(change: dict[str, Any], inconsistent: bool) -> None:
    set_: Object = {"status": dict(SET_STATUS)}
    assert inconsistent_status(set_, {**SET_STATUS, **change}) is inconsistent


def test_inconsistent_status_reads_missing_fields_as_zero() -> None:
    assert not inconsistent_status({}, {"replicas": 0, "currentRevision": ""})
    assert inconsistent_status({}, {"observedGeneration": 1})


@pytest.mark.parametrize(
    ("change", "decides"),
    [
        ({"readyReplicas": 2, "availableReplicas": 2}, False),
        ({"replicas": 2, "updatedReplicas": 1, "observedGeneration": 3}, False),
        ({"currentRevision": "foo-2"}, True),
        ({"collisionCount": 1}, True),
        ({"currentReplicas": 2}, True),  # mid-rollout: a re-created member's revision
    ],
)
def test_decides_next_pass_only_for_what_the_next_pass_reads(
    change: dict[str, Any], decides: bool
) -> None:
    """Only the current revision, the collision count and - while a rollout is under way -
    the current replicas are read back by the next pass; the rest is report."""
    stored = {
        "observedGeneration": 2,
        "currentRevision": "foo-1",
        "updateRevision": "foo-2",
        "collisionCount": 0,
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 0,
    }
    set_ = new_stateful_set(3)
    set_["status"] = dict(stored)
    assert decides_next_pass(set_, {**stored, **change}) is decides


def test_current_replicas_decide_nothing_once_the_revisions_agree() -> None:
    set_ = new_stateful_set(3)
    set_["status"] = {"currentRevision": "foo-1", "updateRevision": "foo-1", "currentReplicas": 1}
    assert not decides_next_pass(set_, {**set_["status"], "currentReplicas": 2})
