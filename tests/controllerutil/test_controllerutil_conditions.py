"""Conditions, mirroring apimachinery's pkg/api/meta/conditions_test.go, plus the dict-world
cases (timestamps stamped from ``now``, observedGeneration 0 left out)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from kcontrol.controllerutil import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
NOW_TEXT = "2026-01-02T03:04:05Z"
HOUR_BEFORE = "2026-01-02T02:04:05Z"
HOUR_AFTER = "2026-01-02T04:04:05Z"

SET_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], bool, list[dict[str, Any]]]] = [
    (
        "should-add",
        [{"type": "first"}, {"type": "third"}],
        {
            "type": "second",
            "status": "True",
            "lastTransitionTime": HOUR_BEFORE,
            "reason": "reason",
            "message": "message",
        },
        True,
        [
            {"type": "first"},
            {"type": "third"},
            {
                "type": "second",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "reason",
                "message": "message",
            },
        ],
    ),
    (
        "add-stamps-now",
        [],
        {"type": "Ready", "status": "False", "reason": "Waiting", "message": ""},
        True,
        [
            {
                "type": "Ready",
                "status": "False",
                "reason": "Waiting",
                "message": "",
                "lastTransitionTime": NOW_TEXT,
            }
        ],
    ),
    (
        "use-supplied-time",
        [{"type": "first"}, {"type": "second", "status": "False"}, {"type": "third"}],
        {
            "type": "second",
            "status": "True",
            "lastTransitionTime": HOUR_BEFORE,
            "reason": "reason",
            "message": "message",
        },
        True,
        [
            {"type": "first"},
            {
                "type": "second",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "reason",
                "message": "message",
            },
            {"type": "third"},
        ],
    ),
    (
        "status-change-stamps-now",
        [
            {
                "type": "Ready",
                "status": "False",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "Waiting",
                "message": "",
            }
        ],
        {"type": "Ready", "status": "True", "reason": "Available", "message": ""},
        True,
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": NOW_TEXT,
                "reason": "Available",
                "message": "",
            }
        ],
    ),
    (
        "update-fields",
        [
            {"type": "first"},
            {"type": "second", "status": "True", "lastTransitionTime": HOUR_BEFORE},
            {"type": "third"},
        ],
        {
            "type": "second",
            "status": "True",
            "lastTransitionTime": HOUR_AFTER,
            "reason": "reason",
            "message": "message",
            "observedGeneration": 3,
        },
        True,
        [
            {"type": "first"},
            {
                "type": "second",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "reason",
                "message": "message",
                "observedGeneration": 3,
            },
            {"type": "third"},
        ],
    ),
    (
        "same-status-keeps-time-without-a-supplied-one",
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "m",
                "observedGeneration": 1,
            }
        ],
        {
            "type": "Ready",
            "status": "True",
            "reason": "A",
            "message": "m2",
            "observedGeneration": 2,
        },
        True,
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "m2",
                "observedGeneration": 2,
            }
        ],
    ),
    (
        "observed-generation-zero-is-left-out",
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "",
                "observedGeneration": 4,
            }
        ],
        {"type": "Ready", "status": "True", "reason": "A", "message": ""},
        True,
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "",
            }
        ],
    ),
    (
        "nothing-changes",
        [{"type": "type", "status": "True", "lastTransitionTime": HOUR_BEFORE}],
        {"type": "type", "status": "True", "lastTransitionTime": HOUR_BEFORE},
        False,
        [{"type": "type", "status": "True", "lastTransitionTime": HOUR_BEFORE}],
    ),
    (
        "nothing-changes-without-a-supplied-time",
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "m",
                "observedGeneration": 2,
            }
        ],
        {"type": "Ready", "status": "True", "reason": "A", "message": "m", "observedGeneration": 2},
        False,
        [
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": HOUR_BEFORE,
                "reason": "A",
                "message": "m",
                "observedGeneration": 2,
            }
        ],
    ),
]


@pytest.mark.parametrize(
    ("conditions", "new", "changed", "expected"),
    [c[1:] for c in SET_CASES],
    ids=[c[0] for c in SET_CASES],
)
def test_set_status_condition(
    conditions: list[dict[str, Any]],
    new: dict[str, Any],
    changed: bool,
    expected: list[dict[str, Any]],
) -> None:
    conditions = copy.deepcopy(conditions)
    new_before = copy.deepcopy(new)
    assert set_status_condition(conditions, new, now=NOW) is changed
    assert conditions == expected
    assert new == new_before


def test_set_status_condition_does_not_keep_a_reference_to_new() -> None:
    conditions: list[dict[str, Any]] = []
    new = {"type": "Ready", "status": "True", "reason": "A", "message": ""}
    set_status_condition(conditions, new, now=NOW)
    new["status"] = "False"
    assert conditions[0]["status"] == "True"


def test_set_status_condition_stamps_the_current_time_by_default() -> None:
    conditions: list[dict[str, Any]] = []
    before = datetime.now(UTC).replace(microsecond=0)
    set_status_condition(conditions, {"type": "Ready", "status": "True"})
    after = datetime.now(UTC)
    stamped = datetime.strptime(conditions[0]["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ")
    assert before <= stamped.replace(tzinfo=UTC) <= after


@pytest.mark.parametrize(
    ("now", "text"),
    [
        (datetime(2026, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1))), NOW_TEXT),
        (datetime(2026, 1, 2, 3, 4, 5, 999999), NOW_TEXT),  # naive: taken as UTC
    ],
    ids=["offset", "naive"],
)
def test_set_status_condition_writes_utc_seconds(now: datetime, text: str) -> None:
    conditions: list[dict[str, Any]] = []
    set_status_condition(conditions, {"type": "Ready", "status": "True"}, now=now)
    assert conditions[0]["lastTransitionTime"] == text


def test_set_status_condition_needs_a_type() -> None:
    with pytest.raises(ValueError, match="type"):
        set_status_condition([], {"status": "True"}, now=NOW)


REMOVE_CASES = [
    (
        "present",
        [{"type": "first"}, {"type": "second"}, {"type": "third"}],
        "second",
        True,
        [{"type": "first"}, {"type": "third"}],
    ),
    (
        "not-present",
        [{"type": "first"}, {"type": "second"}, {"type": "third"}],
        "fourth",
        False,
        [{"type": "first"}, {"type": "second"}, {"type": "third"}],
    ),
    ("empty_conditions", [], "Foo", False, []),
]


@pytest.mark.parametrize(
    ("conditions", "type_", "removed", "expected"),
    [c[1:] for c in REMOVE_CASES],
    ids=[c[0] for c in REMOVE_CASES],
)
def test_remove_status_condition(
    conditions: list[dict[str, Any]], type_: str, removed: bool, expected: list[dict[str, Any]]
) -> None:
    conditions = copy.deepcopy(conditions)
    same_list = conditions
    assert remove_status_condition(conditions, type_) is removed
    assert conditions == expected
    assert conditions is same_list  # in place: the status holding the list sees the change


def test_find_status_condition() -> None:
    conditions = [{"type": "first"}, {"type": "second"}]
    assert find_status_condition(conditions, "third") is None
    found = find_status_condition(conditions, "second")
    assert found == {"type": "second"}
    assert found is conditions[1]


PRESENT_CASES = [
    ("doesnt-match-true", [{"type": "first", "status": "Unknown"}], "first", "True", False),
    ("does-match-true", [{"type": "first", "status": "True"}], "first", "True", True),
    ("does-match-false", [{"type": "first", "status": "False"}], "first", "False", True),
    ("absent", [{"type": "first", "status": "True"}], "second", "True", False),
]


@pytest.mark.parametrize(
    ("conditions", "type_", "status", "expected"),
    [c[1:] for c in PRESENT_CASES],
    ids=[c[0] for c in PRESENT_CASES],
)
def test_is_status_condition_present_and_equal(
    conditions: list[dict[str, Any]], type_: str, status: str, expected: bool
) -> None:
    assert is_status_condition_present_and_equal(conditions, type_, status) is expected


def test_is_status_condition_true_and_false() -> None:
    conditions = [
        {"type": "Ready", "status": "True"},
        {"type": "Degraded", "status": "False"},
        {"type": "Progressing", "status": "Unknown"},
    ]
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_false(conditions, "Ready")
    assert is_status_condition_false(conditions, "Degraded")
    assert not is_status_condition_true(conditions, "Degraded")
    assert not is_status_condition_true(conditions, "Progressing")
    assert not is_status_condition_false(conditions, "Progressing")
    assert not is_status_condition_true(conditions, "Missing")
    assert not is_status_condition_false(conditions, "Missing")
