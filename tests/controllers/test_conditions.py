"""The shared workload-status condition helpers (kcontrol_controllers.conditions): upstream's
Get/Set/RemoveCondition of the ReplicaSet controller, which the Deployment and Job controllers
build on. The Deployment's variant: tests/controllers/deployment/test_deployment_conditions.py."""

from __future__ import annotations

from typing import Any

import pytest

from kcontrol_controllers.conditions import get_condition, remove_condition, set_condition

A_TRUE = {"type": "A", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": "t0"}
B_TRUE = {"type": "B", "status": "True", "reason": "R"}


@pytest.mark.parametrize(
    ("status", "condition_type", "expected"),
    [
        pytest.param({"conditions": [A_TRUE, B_TRUE]}, "B", B_TRUE, id="found"),
        pytest.param(
            {"conditions": [A_TRUE, {**A_TRUE, "status": "False"}]}, "A", A_TRUE, id="the first"
        ),
        pytest.param({"conditions": [A_TRUE]}, "B", None, id="other type"),
        pytest.param({}, "A", None, id="no conditions"),
        pytest.param({"conditions": None}, "A", None, id="null conditions"),
    ],
)
def test_get_condition(
    status: dict[str, Any], condition_type: str, expected: dict[str, Any] | None
) -> None:
    assert get_condition(status, condition_type) == expected


@pytest.mark.parametrize(
    ("before", "condition", "after"),
    [
        pytest.param({}, A_TRUE, [A_TRUE], id="first condition"),
        pytest.param({"conditions": [B_TRUE]}, A_TRUE, [B_TRUE, A_TRUE], id="added last"),
        pytest.param(
            {"conditions": [A_TRUE]},
            {**A_TRUE, "message": "new", "lastTransitionTime": "t1"},
            [A_TRUE],
            id="same status and reason: untouched, message and time included",
        ),
        pytest.param(
            {"conditions": [A_TRUE, B_TRUE]},
            {**A_TRUE, "reason": "Other", "lastTransitionTime": "t1"},
            [B_TRUE, {**A_TRUE, "reason": "Other", "lastTransitionTime": "t1"}],
            id="other reason: replaced whole, moved last",
        ),
        pytest.param(
            {"conditions": [A_TRUE]},
            {**A_TRUE, "status": "False", "lastTransitionTime": "t1"},
            [{**A_TRUE, "status": "False", "lastTransitionTime": "t1"}],
            id="other status: replaced",
        ),
    ],
)
def test_set_condition(
    before: dict[str, Any], condition: dict[str, Any], after: list[dict[str, Any]]
) -> None:
    set_condition(before, condition)
    assert before["conditions"] == after


def test_set_condition_stores_a_copy() -> None:
    status: dict[str, Any] = {}
    condition = dict(A_TRUE)
    set_condition(status, condition)
    condition["status"] = "False"
    assert status["conditions"] == [A_TRUE]


@pytest.mark.parametrize(
    ("before", "condition_type", "after"),
    [
        pytest.param({"conditions": [A_TRUE, B_TRUE]}, "A", {"conditions": [B_TRUE]}, id="one"),
        pytest.param(
            {"conditions": [A_TRUE, {**A_TRUE, "status": "False"}, B_TRUE]},
            "A",
            {"conditions": [B_TRUE]},
            id="every one of the type",
        ),
        pytest.param({"conditions": [A_TRUE]}, "A", {}, id="the last: the key goes"),
        pytest.param({"conditions": [A_TRUE]}, "B", {"conditions": [A_TRUE]}, id="absent type"),
        pytest.param({}, "A", {}, id="no conditions"),
        pytest.param({"conditions": []}, "A", {}, id="empty list: the key goes"),
    ],
)
def test_remove_condition(
    before: dict[str, Any], condition_type: str, after: dict[str, Any]
) -> None:
    remove_condition(before, condition_type)
    assert before == after
