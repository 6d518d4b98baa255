"""The pure pieces of a collection (named cases): which pods each pass picks, their order,
and the status patch that marks a pod Failed with its DisruptionTarget condition."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from podgc_fixtures import NOW, OUT_OF_SERVICE, new_node, new_pod, ts

from kcontrol.client import Object
from kcontrol_controllers.podgc._gc import (
    ORPHANED_CONDITION,
    eviction_and_creation_order,
    failed_status_patch,
    is_pod_terminated,
    nodes_to_quarantine,
    orphaned_pods,
    terminated_pods_to_delete,
    terminating_pods_on_out_of_service_nodes,
    unscheduled_terminating_pods,
    update_pod_condition,
)


def names(pods: list[Object]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


@pytest.mark.parametrize(
    ("phase", "terminated"),
    [
        ("Succeeded", True),
        ("Failed", True),
        (None, True),  # upstream: any phase but Pending/Running/Unknown
        ("Pending", False),
        ("Running", False),
        ("Unknown", False),
    ],
)
def test_is_pod_terminated(phase: str | None, terminated: bool) -> None:
    assert is_pod_terminated(new_pod("p", phase)) is terminated


@pytest.mark.parametrize(
    ("pods", "threshold", "doomed"),
    [
        pytest.param(
            [new_pod("a", "Failed", hours=1), new_pod("b", "Succeeded", hours=2)],
            0,
            [],
            id="threshold 0 disables",
        ),
        pytest.param(
            [new_pod("a", "Failed", hours=1), new_pod("b", "Succeeded", hours=2)],
            -1,
            [],
            id="negative threshold disables",
        ),
        pytest.param(
            [
                new_pod("a", "Failed", hours=1),
                new_pod("b", "Succeeded", hours=2),
                new_pod("c", "Failed", hours=3),
            ],
            1,
            ["a", "b"],
            id="three terminated, threshold 1: the two oldest",
        ),
        pytest.param(
            [
                new_pod("a", "Running", hours=1),
                new_pod("b", "Succeeded", hours=2),
                new_pod("c", "Failed", hours=3),
            ],
            1,
            ["b"],
            id="running pods do not count",
        ),
        pytest.param(
            [new_pod("a", "Failed", hours=1), new_pod("b", "Succeeded", hours=2)],
            1,
            ["a"],
            id="two terminated, threshold 1",
        ),
        pytest.param(
            [new_pod("a", "Failed", hours=1), new_pod("b", "Succeeded", hours=2)],
            5,
            [],
            id="under the threshold",
        ),
        pytest.param(
            [new_pod("a", "Failed", hours=1), new_pod("b", "Succeeded", hours=2)],
            2,
            [],
            id="at the threshold",
        ),
        pytest.param(
            [
                new_pod("a", "Succeeded", hours=3),
                new_pod("b", "Succeeded", hours=2),
                new_pod("c", "Succeeded", hours=1),
            ],
            1,
            ["c", "b"],
            id="oldest first, not by name",
        ),
        pytest.param(
            [
                new_pod("a", "Succeeded", hours=1),
                new_pod("b", "Failed", hours=5, reason="Evicted"),
                new_pod("c", "Failed", hours=2),
            ],
            1,
            ["b", "a"],
            id="evicted first, then the oldest",
        ),
        pytest.param(
            [new_pod("b", "Failed", hours=1), new_pod("a", "Failed", hours=1)],
            1,
            ["a"],
            id="same creation time: by name",
        ),
        pytest.param(
            [new_pod("a", None, hours=2), new_pod("b", "Failed", hours=1)],
            1,
            ["b"],
            id="a pod without a phase counts as terminated",
        ),
    ],
)
def test_terminated_pods_to_delete(pods: list[Object], threshold: int, doomed: list[str]) -> None:
    assert names(terminated_pods_to_delete(pods, threshold)) == doomed


def test_eviction_and_creation_order_puts_a_missing_creation_time_first() -> None:
    undated = new_pod("z", "Failed")
    del undated["metadata"]["creationTimestamp"]
    pods = [new_pod("a", "Failed", hours=1), undated]
    assert names(sorted(pods, key=eviction_and_creation_order)) == ["z", "a"]


NODES = {
    "ready-oos": new_node("ready-oos", ready=True, taints=[OUT_OF_SERVICE]),
    "notready-oos": new_node("notready-oos", ready=False, taints=[OUT_OF_SERVICE]),
    "notready": new_node(
        "notready", ready=False, taints=[{"key": "node.kubernetes.io/unreachable"}]
    ),
    "no-conditions-oos": {
        "metadata": {"name": "no-conditions-oos"},
        "spec": {"taints": [{"key": OUT_OF_SERVICE["key"], "effect": "NoSchedule"}]},
    },
}


@pytest.mark.parametrize(
    ("pods", "doomed"),
    [
        pytest.param(
            [new_pod("a", node="notready-oos", deleting=True)],
            ["a"],
            id="terminating on a NotReady out-of-service node",
        ),
        pytest.param(
            [new_pod("a", node="no-conditions-oos", deleting=True)],
            ["a"],
            id="no Ready condition counts as not ready; any effect of the taint",
        ),
        pytest.param(
            [new_pod("a", node="notready-oos", deleting=False)],
            [],
            id="not terminating",
        ),
        pytest.param(
            [new_pod("a", node="ready-oos", deleting=True)],
            [],
            id="node ready",
        ),
        pytest.param(
            [new_pod("a", node="notready", deleting=True)],
            [],
            id="NotReady without the out-of-service taint",
        ),
        pytest.param(
            [new_pod("a", node="gone", deleting=True), new_pod("b", node="", deleting=True)],
            [],
            id="node not cached, or none",
        ),
        pytest.param(
            [
                new_pod("b", "Succeeded", node="notready-oos", deleting=True, hours=3),
                new_pod("a", "Running", node="notready-oos", deleting=True, hours=2),
                new_pod(
                    "c", "Failed", node="notready-oos", deleting=True, reason="Evicted", hours=9
                ),
            ],
            ["c", "a", "b"],
            id="sorted: evicted, then the oldest",
        ),
    ],
)
def test_terminating_pods_on_out_of_service_nodes(pods: list[Object], doomed: list[str]) -> None:
    assert names(terminating_pods_on_out_of_service_nodes(pods, NODES.get)) == doomed


@pytest.mark.parametrize(
    ("pods", "doomed"),
    [
        pytest.param(
            [
                new_pod("a", "Failed", node="", deleting=True),
                new_pod("b", "Succeeded", node="", deleting=True),
                new_pod("c", "Running", node="", deleting=True),
            ],
            ["a", "b", "c"],
            id="unscheduled pod in any phase must be deleted",
        ),
        pytest.param(
            [
                new_pod("a", "Failed", node="", deleting=False),
                new_pod("b", "Succeeded", node="node", deleting=False),
                new_pod("c", "Running", node="node", deleting=True),
            ],
            [],
            id="scheduled, or not terminating, must not be deleted",
        ),
    ],
)
def test_unscheduled_terminating_pods(pods: list[Object], doomed: list[str]) -> None:
    assert names(unscheduled_terminating_pods(pods)) == doomed


def test_nodes_to_quarantine_and_orphans() -> None:
    pods = [
        new_pod("a", node="here"),
        new_pod("b", node="gone"),
        new_pod("c", node=""),
        new_pod("d", node="gone"),
        new_pod("e", node="also-gone"),
    ]
    assert nodes_to_quarantine(pods, {"here"}) == {"gone", "also-gone"}
    assert names(orphaned_pods(pods, {"gone"})) == ["b", "d"]
    assert orphaned_pods(pods, set()) == []


# -- the status patch -------------------------------------------------------------------------

LATER = NOW + timedelta(minutes=5)


def test_update_pod_condition_appends_a_new_condition_at_now() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True"}]}
    assert update_pod_condition(status, ORPHANED_CONDITION, NOW)
    assert status["conditions"] == [
        {"type": "Ready", "status": "True"},
        {**ORPHANED_CONDITION, "lastTransitionTime": ts(NOW)},
    ]


def test_update_pod_condition_keeps_the_transition_time_of_an_unchanged_status() -> None:
    old = {**ORPHANED_CONDITION, "message": "before", "lastTransitionTime": ts(NOW)}
    status: dict[str, Any] = {"conditions": [old]}
    assert update_pod_condition(status, ORPHANED_CONDITION, LATER), "the message changed"
    assert status["conditions"] == [{**ORPHANED_CONDITION, "lastTransitionTime": ts(NOW)}]
    assert not update_pod_condition(status, ORPHANED_CONDITION, LATER), "nothing changed"


def test_update_pod_condition_moves_the_transition_time_when_the_status_changes() -> None:
    old = {**ORPHANED_CONDITION, "status": "False", "lastTransitionTime": ts(NOW)}
    status: dict[str, Any] = {"conditions": [old]}
    assert update_pod_condition(status, ORPHANED_CONDITION, LATER)
    assert status["conditions"] == [{**ORPHANED_CONDITION, "lastTransitionTime": ts(LATER)}]


def test_failed_status_patch_with_the_disruption_target_condition() -> None:
    pod = new_pod("a", "Running", conditions=[{"type": "Ready", "status": "True"}])
    assert failed_status_patch(pod, NOW, ORPHANED_CONDITION) == {
        "metadata": {"uid": "uid-a"},
        "status": {
            "phase": "Failed",
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "DisruptionTarget"}],
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists",
                    "lastTransitionTime": ts(NOW),
                }
            ],
        },
    }
    assert pod["status"]["conditions"] == [{"type": "Ready", "status": "True"}], "not mutated"


def test_failed_status_patch_without_condition_sets_the_phase_only() -> None:
    for phase in ("Running", "Pending", "Unknown", None):
        assert failed_status_patch(new_pod("a", phase), NOW) == {
            "metadata": {"uid": "uid-a"},
            "status": {"phase": "Failed"},
        }


def test_failed_status_patch_with_the_condition_already_there_sets_the_phase_only() -> None:
    there = {**ORPHANED_CONDITION, "lastTransitionTime": ts(NOW)}
    pod = new_pod("a", "Running", conditions=[there])
    assert failed_status_patch(pod, LATER, ORPHANED_CONDITION) == {
        "metadata": {"uid": "uid-a"},
        "status": {"phase": "Failed"},
    }


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_are_not_patched(phase: str) -> None:
    assert failed_status_patch(new_pod("a", phase), NOW, ORPHANED_CONDITION) is None
