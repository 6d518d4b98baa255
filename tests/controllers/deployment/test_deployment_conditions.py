"""Conditions and progress predicates (upstream deployment_util_test.go: TestGetCondition,
TestSetCondition, TestRemoveCondition, TestDeploymentComplete, TestDeploymentProgressing,
TestDeploymentTimedOut)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kcontrol.metatime import format_time
from kcontrol_controllers.conditions import get_condition, remove_condition
from kcontrol_controllers.deployment._conditions import (
    AVAILABLE,
    NEW_RS_AVAILABLE_REASON,
    PROGRESSING,
    REPLICA_FAILURE,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    has_progress_deadline,
    new_condition,
    replica_set_to_deployment_condition,
    set_condition,
)


def cond_progressing() -> dict[str, Any]:
    return {"type": PROGRESSING, "status": "False", "reason": "ForSomeReason"}


def cond_progressing2() -> dict[str, Any]:
    return {"type": PROGRESSING, "status": "True", "reason": "BecauseItIs"}


def cond_available() -> dict[str, Any]:
    return {"type": AVAILABLE, "status": "True", "reason": "AwesomeController"}


def status() -> dict[str, Any]:
    return {"conditions": [cond_progressing(), cond_available()]}


@pytest.mark.parametrize(
    ("condition_type", "expected"),
    [
        pytest.param(AVAILABLE, True, id="condition exists"),
        pytest.param(REPLICA_FAILURE, False, id="condition does not exist"),
    ],
)
def test_get_condition(condition_type: str, expected: bool) -> None:
    assert (get_condition(status(), condition_type) is not None) is expected


@pytest.mark.parametrize(
    ("before", "condition", "expected"),
    [
        pytest.param({}, cond_available(), {"conditions": [cond_available()]}, id="first time"),
        pytest.param(
            {"conditions": [cond_progressing()]}, cond_available(), status(), id="simple set"
        ),
        pytest.param(
            {"conditions": [cond_progressing()]},
            cond_progressing2(),
            {"conditions": [cond_progressing2()]},
            id="overwrite",
        ),
    ],
)
def test_set_condition(
    before: dict[str, Any], condition: dict[str, Any], expected: dict[str, Any]
) -> None:
    set_condition(before, condition)
    assert before == expected


def test_set_condition_same_status_and_reason_changes_nothing() -> None:
    old = {
        "type": PROGRESSING,
        "status": "True",
        "reason": "R",
        "message": "old",
        "lastUpdateTime": "t0",
    }
    deployment_status: dict[str, Any] = {"conditions": [old]}
    set_condition(deployment_status, {**old, "message": "new", "lastUpdateTime": "t1"})
    assert deployment_status["conditions"] == [old]


def test_set_condition_keeps_transition_time_when_only_the_reason_changes() -> None:
    deployment_status: dict[str, Any] = {
        "conditions": [
            {"type": PROGRESSING, "status": "True", "reason": "A", "lastTransitionTime": "t0"}
        ]
    }
    set_condition(
        deployment_status,
        {"type": PROGRESSING, "status": "True", "reason": "B", "lastTransitionTime": "t1"},
    )
    assert deployment_status["conditions"][0]["lastTransitionTime"] == "t0"
    assert deployment_status["conditions"][0]["reason"] == "B"
    set_condition(
        deployment_status,
        {"type": PROGRESSING, "status": "False", "reason": "C", "lastTransitionTime": "t2"},
    )
    assert deployment_status["conditions"][0]["lastTransitionTime"] == "t2"


@pytest.mark.parametrize(
    ("before", "condition_type", "expected"),
    [
        pytest.param({}, PROGRESSING, {}, id="remove from empty status"),
        pytest.param({"conditions": [cond_progressing()]}, PROGRESSING, {}, id="simple remove"),
        pytest.param(status(), REPLICA_FAILURE, status(), id="doesn't remove anything"),
    ],
)
def test_remove_condition(
    before: dict[str, Any], condition_type: str, expected: dict[str, Any]
) -> None:
    remove_condition(before, condition_type)
    assert before == expected


def test_new_condition_and_replica_set_conversion() -> None:
    now = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)
    assert new_condition(PROGRESSING, "True", "R", "m", now) == {
        "type": PROGRESSING,
        "status": "True",
        "lastUpdateTime": "2026-03-04T05:06:07Z",
        "lastTransitionTime": "2026-03-04T05:06:07Z",
        "reason": "R",
        "message": "m",
    }
    rs_condition = {
        "type": REPLICA_FAILURE,
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "FailedCreate",
        "message": "quota",
    }
    assert replica_set_to_deployment_condition(rs_condition) == {
        **rs_condition,
        "lastUpdateTime": "2026-01-01T00:00:00Z",
    }


def deployment(
    desired: int, current: int, updated: int, available: int, unavailable: int, surge: int
) -> dict[str, Any]:
    return {
        "metadata": {"generation": 0},
        "spec": {
            "replicas": desired,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": unavailable, "maxSurge": surge},
            },
        },
        "status": {
            "replicas": current,
            "updatedReplicas": updated,
            "availableReplicas": available,
        },
    }


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        pytest.param(deployment(5, 5, 5, 4, 1, 0), False, id="min but not all pods available"),
        pytest.param(deployment(5, 5, 5, 3, 1, 0), False, id="min availability not honored"),
        pytest.param(deployment(5, 5, 5, 5, 0, 0), True, id="complete"),
        pytest.param(deployment(5, 5, 4, 5, 0, 0), False, id="available but not updated"),
        pytest.param(deployment(1, 2, 1, 1, 0, 1), False, id="still running old pods"),
        pytest.param(deployment(1, 1, 1, 0, 1, 1), False, id="one replica never comes up"),
    ],
)
def test_deployment_complete(d: dict[str, Any], expected: bool) -> None:
    assert deployment_complete(d, d["status"]) is expected


def test_deployment_complete_needs_the_current_generation() -> None:
    d = deployment(5, 5, 5, 5, 0, 0)
    d["metadata"]["generation"] = 3
    assert not deployment_complete(d, {**d["status"], "observedGeneration": 2})
    assert deployment_complete(d, {**d["status"], "observedGeneration": 3})


def counts(current: int, updated: int, ready: int, available: int) -> dict[str, int]:
    return {
        "replicas": current,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
    }


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(counts(10, 4, 4, 4), counts(10, 6, 4, 4), True, id="updated pods"),
        pytest.param(counts(10, 4, 4, 4), counts(10, 4, 4, 4), False, id="not progressing"),
        pytest.param(counts(10, 4, 6, 6), counts(8, 4, 6, 6), True, id="old pods removed"),
        pytest.param(counts(10, 7, 3, 3), counts(10, 6, 3, 3), False, id="less new pods"),
        pytest.param(counts(10, 4, 7, 7), counts(8, 8, 5, 5), True, id="less overall, more new"),
        pytest.param(counts(10, 10, 9, 8), counts(10, 10, 10, 8), True, id="more ready pods"),
        pytest.param(counts(10, 10, 10, 9), counts(10, 10, 10, 10), True, id="more available"),
    ],
)
def test_deployment_progressing(old: dict[str, int], new: dict[str, int], expected: bool) -> None:
    assert deployment_progressing({"status": old}, new) is expected


def time_fn(minute: int, second: int) -> datetime:
    return datetime(2016, 1, 1, 0, minute, second, tzinfo=UTC)


def timed(reason: str, deadline: int | None, since: datetime | None) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": PROGRESSING, "status": "True", "reason": reason}
    if since is not None:
        condition["lastUpdateTime"] = format_time(since)
    spec: dict[str, Any] = {}
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    return {"spec": spec, "status": {"conditions": [condition]}}


@pytest.mark.parametrize(
    ("d", "now", "expected"),
    [
        pytest.param(timed("", None, time_fn(1, 9)), time_fn(1, 20), False, id="nil deadline"),
        pytest.param(timed("", 2**31 - 1, time_fn(1, 9)), time_fn(1, 20), False, id="infinite"),
        pytest.param(
            timed("", 10, time_fn(1, 9)), time_fn(1, 20), True, id="11s past, 10s deadline"
        ),
        pytest.param(
            timed("", 10, time_fn(1, 11)), time_fn(1, 20), False, id="9s past, 10s deadline"
        ),
        pytest.param(
            timed("", 10, time_fn(1, 10)), time_fn(1, 20), False, id="exactly the deadline"
        ),
        pytest.param(
            timed(NEW_RS_AVAILABLE_REASON, 10, None), time_fn(1, 20), False, id="previous complete"
        ),
        pytest.param(
            timed("ProgressDeadlineExceeded", 10, time_fn(1, 19)),
            time_fn(1, 20),
            True,
            id="already",
        ),
        pytest.param(
            {"spec": {"progressDeadlineSeconds": 10}, "status": {}},
            time_fn(1, 20),
            False,
            id="no condition",
        ),
    ],
)
def test_deployment_timed_out(d: dict[str, Any], now: datetime, expected: bool) -> None:
    assert deployment_timed_out(d, d["status"], now) is expected


def test_has_progress_deadline() -> None:
    assert not has_progress_deadline({"spec": {}})
    assert not has_progress_deadline({"spec": {"progressDeadlineSeconds": 2**31 - 1}})
    assert has_progress_deadline({"spec": {"progressDeadlineSeconds": 600}})
