"""Status maths and conditions, table-driven (upstream TestCalculateStatus,
TestCalculateStatusConditions, TestGetCondition/SetCondition/RemoveCondition)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from replicaset_fixtures import new_pod, new_replica_set

from kcontrol.client import Object
from kcontrol_controllers.conditions import get_condition, remove_condition, set_condition
from kcontrol_controllers.replicaset._status import calculate_status, status_in_sync

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
FULL = {"foo": "bar", "type": "production"}
PARTIAL = {"foo": "bar"}


def rs(replicas: int = 2, min_ready_seconds: int = 0, **status: Any) -> Object:
    obj = new_replica_set(replicas, PARTIAL, min_ready_seconds=min_ready_seconds)
    if status:
        obj["status"] = status
    return obj


def running(name: str, labels: dict[str, str] = FULL, ready_since: str | None = None) -> Object:
    return new_pod(name, rs(), labels=labels, ready_since=ready_since)


def counts(status: dict[str, Any]) -> tuple[int, int, int, int, int | None]:
    return (
        status["replicas"],
        status["fullyLabeledReplicas"],
        status["readyReplicas"],
        status["availableReplicas"],
        status.get("terminatingReplicas"),
    )


@dataclass
class CountCase:
    name: str
    active: list[Object]
    terminating: list[Object] | None
    expected: tuple[int, int, int, int, int | None]
    min_ready_seconds: int = 0


COUNT_CASES = [
    CountCase("one fully labelled pod", [running("p1")], None, (1, 1, 1, 1, None)),
    CountCase(
        "one pod missing a template label", [running("p1", PARTIAL)], None, (1, 0, 1, 1, None)
    ),
    CountCase("two fully labelled pods", [running("p1"), running("p2")], [], (2, 2, 2, 2, 0)),
    CountCase(
        "fully and partly labelled",
        [running("p1"), running("p2", PARTIAL)],
        [],
        (2, 1, 2, 2, 0),
    ),
    CountCase(
        "two terminating pods",
        [running("p1")],
        [running("p2"), running("p3")],
        (1, 1, 1, 1, 2),
    ),
    CountCase(
        "pending pods are neither ready nor available",
        [new_pod("p1", rs(), "Pending", labels=FULL)],
        [],
        (1, 1, 0, 0, 0),
    ),
    CountCase(
        "ready for less than minReadySeconds: not available",
        [
            running("p1", ready_since="2026-01-01T11:00:00Z"),
            running("p2", ready_since="2026-01-01T11:59:00Z"),
        ],
        [],
        (2, 2, 2, 1, 0),
        min_ready_seconds=3600,
    ),
    CountCase(
        "ready exactly minReadySeconds ago: available",
        [running("p1", ready_since="2026-01-01T11:00:00Z")],
        [],
        (1, 1, 1, 1, 0),
        min_ready_seconds=3600,
    ),
    CountCase(
        "ready without a transition time and minReadySeconds: not available",
        [running("p1")],
        [],
        (1, 1, 1, 0, 0),
        min_ready_seconds=1,
    ),
]


@pytest.mark.parametrize("case", COUNT_CASES, ids=lambda c: c.name)
def test_calculate_status_counts(case: CountCase) -> None:
    status = calculate_status(
        rs(min_ready_seconds=case.min_ready_seconds), case.active, case.terminating, None, NOW
    )
    assert counts(status) == case.expected


def test_calculate_status_keeps_other_fields_and_leaves_the_replica_set_alone() -> None:
    original = rs(observedGeneration=7, conditions=[{"type": "Custom", "status": "True"}])
    original["status"]["replicas"] = 5
    status = calculate_status(original, [running("p1")], [], None, NOW)
    assert status["observedGeneration"] == 7
    assert status["conditions"] == [{"type": "Custom", "status": "True"}]
    assert original["status"]["replicas"] == 5


EXISTING_FAILURE = {"type": "ReplicaFailure", "status": "True", "reason": "Old", "message": "old"}


@dataclass
class ConditionCase:
    name: str
    status: dict[str, Any]
    pods: int
    failure: str | None
    expected: list[dict[str, Any]] | None


CONDITION_CASES = [
    ConditionCase(
        "failure with too few pods: FailedCreate",
        {},
        1,
        "fake manageReplicasErr",
        [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": "fake manageReplicasErr",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
            }
        ],
    ),
    ConditionCase(
        "failure with too many pods: FailedDelete",
        {},
        3,
        "fake manageReplicasErr",
        [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedDelete",
                "message": "fake manageReplicasErr",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
            }
        ],
    ),
    ConditionCase(
        "failure with the right count: no reason",
        {},
        2,
        "odd",
        [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "",
                "message": "odd",
                "lastTransitionTime": "2026-01-01T12:00:00Z",
            }
        ],
    ),
    ConditionCase(
        "success removes the condition", {"conditions": [EXISTING_FAILURE]}, 1, None, None
    ),
    ConditionCase(
        "failure keeps an existing condition",
        {"conditions": [EXISTING_FAILURE]},
        1,
        "new",
        [EXISTING_FAILURE],
    ),
    ConditionCase("success without a condition: none", {}, 1, None, None),
]


@pytest.mark.parametrize("case", CONDITION_CASES, ids=lambda c: c.name)
def test_calculate_status_conditions(case: ConditionCase) -> None:
    replica_set = rs(2, **case.status)
    pods = [running(f"p{i}") for i in range(case.pods)]
    status = calculate_status(replica_set, pods, [], case.failure, NOW)
    assert status.get("conditions") == case.expected


def test_removing_the_failure_keeps_other_conditions() -> None:
    other = {"type": "ImagePullBackOff", "status": "True", "reason": "NonExistentImage"}
    status = calculate_status(
        rs(1, conditions=[other, EXISTING_FAILURE]), [running("p")], [], None, NOW
    )
    assert status["conditions"] == [other]


# -- condition helpers ---------------------------------------------------------------------------


def test_get_condition() -> None:
    status = {"conditions": [EXISTING_FAILURE]}
    assert get_condition(status, "ReplicaFailure") == EXISTING_FAILURE
    assert get_condition(status, "ImagePullBackOff") is None
    assert get_condition({}, "ReplicaFailure") is None


@pytest.mark.parametrize(
    ("existing", "new", "expected"),
    [
        (
            [],
            {"type": "A", "status": "True", "reason": "R"},
            [{"type": "A", "status": "True", "reason": "R"}],
        ),
        (
            [{"type": "A", "status": "True", "reason": "R", "message": "kept"}],
            {"type": "A", "status": "True", "reason": "R", "message": "ignored"},
            [{"type": "A", "status": "True", "reason": "R", "message": "kept"}],
        ),
        (
            [{"type": "A", "status": "True", "reason": "R"}, {"type": "B", "status": "True"}],
            {"type": "A", "status": "True", "reason": "Other"},
            [{"type": "B", "status": "True"}, {"type": "A", "status": "True", "reason": "Other"}],
        ),
    ],
    ids=["added", "same status and reason: unchanged", "other reason: replaced, moved last"],
)
def test_set_condition(
    existing: list[dict[str, Any]], new: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    status: dict[str, Any] = {"conditions": existing} if existing else {}
    set_condition(status, new)
    assert status["conditions"] == expected


def test_remove_condition() -> None:
    status: dict[str, Any] = {"conditions": [EXISTING_FAILURE, {"type": "B"}]}
    remove_condition(status, "ReplicaFailure")
    assert status == {"conditions": [{"type": "B"}]}
    remove_condition(status, "B")
    assert status == {}
    remove_condition(status, "B")
    assert status == {}


# -- when a write is needed ----------------------------------------------------------------------

IN_SYNC = {
    "replicas": 2,
    "fullyLabeledReplicas": 2,
    "readyReplicas": 1,
    "availableReplicas": 1,
    "terminatingReplicas": 0,
    "observedGeneration": 3,
}


@pytest.mark.parametrize(
    ("change", "in_sync"),
    [
        ({}, True),
        ({"replicas": 3}, False),
        ({"fullyLabeledReplicas": 1}, False),
        ({"readyReplicas": 2}, False),
        ({"availableReplicas": 0}, False),
        ({"terminatingReplicas": 1}, False),
        ({"terminatingReplicas": None}, False),
        ({"conditions": [EXISTING_FAILURE]}, False),
    ],
    ids=str,
)
def test_status_in_sync(change: dict[str, Any], in_sync: bool) -> None:
    replica_set = new_replica_set(2, generation=3)
    replica_set["status"] = dict(IN_SYNC)
    new_status = {**IN_SYNC, **change}
    assert (
        status_in_sync(replica_set, {k: v for k, v in new_status.items() if v is not None})
        is in_sync
    )


def test_status_is_written_when_the_generation_was_not_observed() -> None:
    replica_set = new_replica_set(2, generation=4)
    replica_set["status"] = dict(IN_SYNC)
    assert not status_in_sync(replica_set, IN_SYNC)


def test_missing_counts_equal_zero() -> None:
    replica_set = new_replica_set(0, generation=1)
    replica_set["status"] = {"replicas": 0, "observedGeneration": 1, "terminatingReplicas": 0}
    zeros = {
        "replicas": 0,
        "fullyLabeledReplicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
        "terminatingReplicas": 0,
    }
    assert status_in_sync(replica_set, zeros)
