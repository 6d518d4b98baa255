"""Counting finished pods once: the finalizer helpers, the uncounted lists and the finalizer
expectations (upstream's tracking_utils_test.go), and the condition helpers."""

from __future__ import annotations

from typing import Any

import pytest
from job_fixtures import WALL, new_pod

from kcontrol_controllers.job._conditions import ensure_condition_status, new_condition
from kcontrol_controllers.job._tracking import (
    FinalizerExpectations,
    UncountedTerminatedPods,
    clean_uncounted_pods_without_finalizers,
    has_tracking_finalizer,
    is_finished_pod_with_tracking_finalizer,
    remove_tracking_finalizer_patch,
)
from kcontrol_controllers.jobutil import is_job_finished


def test_uid_tracking_expectations() -> None:
    tracks = [
        ("foo", ["a", "b", "c", "d"], ["e", "f"]),
        ("bar", ["x", "y", "z"], ["u", "v", "w"]),
        ("baz", ["w"], ["a"]),
    ]
    expectations = FinalizerExpectations()
    for job, first, _ in tracks:
        expectations.expect_finalizers_removed(job, first)
    for job, first, _ in tracks:
        assert expectations.expected_uids(job) == frozenset(first)
    for job, first, second in tracks:
        for uid in first:
            expectations.finalizer_removal_observed(job, uid)
        expectations.expect_finalizers_removed(job, second)
    for job, _, second in tracks:
        assert expectations.expected_uids(job) == frozenset(second)
    for job, _, _ in tracks:
        expectations.delete_expectations(job)
        assert expectations.expected_uids(job) == frozenset()


def test_observing_an_unexpected_removal_changes_nothing() -> None:
    expectations = FinalizerExpectations()
    expectations.finalizer_removal_observed("job", "a")
    expectations.expect_finalizers_removed("job", ["a"])
    expectations.finalizer_removal_observed("other", "a")
    assert expectations.expected_uids("job") == {"a"}


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(None, False, id="no pod"),
        pytest.param(new_pod(phase="Running"), False, id="running with finalizer"),
        pytest.param(new_pod(phase="Succeeded"), True, id="succeeded with finalizer"),
        pytest.param(new_pod(phase="Failed"), True, id="failed with finalizer"),
        pytest.param(new_pod(phase="Failed", finalizer=False), False, id="failed without"),
    ],
)
def test_finished_pod_with_tracking_finalizer(pod: dict[str, Any] | None, want: bool) -> None:
    assert is_finished_pod_with_tracking_finalizer(pod) is want


def test_remove_finalizer_patch() -> None:
    assert remove_tracking_finalizer_patch(new_pod(finalizer=False)) is None
    pod = new_pod()
    assert has_tracking_finalizer(pod)
    assert remove_tracking_finalizer_patch(pod) == {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"]}
    }


@pytest.mark.parametrize(
    ("status", "with_finalizer", "want_status", "want_updated"),
    [
        pytest.param(
            {"succeeded": 1, "uncountedTerminatedPods": {"succeeded": [], "failed": []}},
            set(),
            {"succeeded": 1, "uncountedTerminatedPods": {"succeeded": [], "failed": []}},
            False,
            id="nothing uncounted",
        ),
        pytest.param(
            {
                "succeeded": 1,
                "failed": 2,
                "uncountedTerminatedPods": {"succeeded": ["a", "b", "c"], "failed": ["d", "e"]},
            },
            {"b", "e"},
            {
                "succeeded": 3,
                "failed": 3,
                "uncountedTerminatedPods": {"succeeded": ["b"], "failed": ["e"]},
            },
            True,
            id="pods without finalizer move to the counters",
        ),
        pytest.param(
            {"uncountedTerminatedPods": {"succeeded": ["a"], "failed": []}},
            {"a"},
            {"uncountedTerminatedPods": {"succeeded": ["a"], "failed": []}},
            False,
            id="finalizer still there",
        ),
    ],
)
def test_clean_uncounted_pods_without_finalizers(
    status: dict[str, Any], with_finalizer: set[str], want_status: Any, want_updated: bool
) -> None:
    assert clean_uncounted_pods_without_finalizers(status, with_finalizer) is want_updated
    assert status == want_status


def test_uncounted_from_status() -> None:
    got = UncountedTerminatedPods.from_status({"uncountedTerminatedPods": {"failed": ["x"]}})
    assert got == UncountedTerminatedPods(frozenset(), frozenset({"x"}))


# -- conditions (upstream TestEnsureJobConditions) ------------------------------------------------

LATER = WALL.replace(hour=13)


@pytest.mark.parametrize(
    ("conditions", "status", "want", "want_updated"),
    [
        pytest.param(
            [],
            "True",
            [new_condition("Suspended", "True", "r", "m", LATER)],
            True,
            id="append true condition",
        ),
        pytest.param([], "False", [], False, id="append false condition"),
        pytest.param(
            [new_condition("Suspended", "False", "", "", WALL)],
            "True",
            [new_condition("Suspended", "True", "r", "m", LATER)],
            True,
            id="update true condition reason",
        ),
        pytest.param(
            [new_condition("Suspended", "True", "r", "m", WALL)],
            "True",
            [new_condition("Suspended", "True", "r", "m", WALL)],
            False,
            id="update true condition with same reason and message",
        ),
    ],
)
def test_ensure_condition_status(
    conditions: list[dict[str, Any]], status: str, want: Any, want_updated: bool
) -> None:
    updated = ensure_condition_status(conditions, "Suspended", status, "r", "m", now=LATER)
    assert updated is want_updated
    assert conditions == want


def test_new_condition_leaves_empty_reason_and_message_out() -> None:
    assert new_condition("Complete", "True", "", "", WALL) == {
        "type": "Complete",
        "status": "True",
        "lastProbeTime": "2026-01-01T12:00:00Z",
        "lastTransitionTime": "2026-01-01T12:00:00Z",
    }


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        pytest.param([], False, id="no conditions"),
        pytest.param([{"type": "Complete", "status": "True"}], True, id="complete"),
        pytest.param([{"type": "Failed", "status": "True"}], True, id="failed"),
        pytest.param([{"type": "Failed", "status": "False"}], False, id="failed false"),
        pytest.param([{"type": "FailureTarget", "status": "True"}], False, id="interim only"),
        pytest.param(
            [{"type": "Suspended", "status": "True"}, {"type": "Complete", "status": "True"}],
            True,
            id="complete after another",
        ),
    ],
)
def test_is_job_finished(conditions: list[dict[str, Any]], want: bool) -> None:
    assert is_job_finished({"status": {"conditions": conditions}}) is want
