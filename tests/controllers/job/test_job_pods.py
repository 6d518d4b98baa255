"""Pod predicates and the deletion order of active pods (upstream ``controller.ActivePods``,
TestSortingActivePods in controller_utils_test.go)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from job_fixtures import ago, new_job, new_pod

from kcontrol_controllers.activepods import sort_active_pods
from kcontrol_controllers.job._pods import count_ready_pods, count_terminating_pods, is_pod_failed


def pod(
    name: str,
    *,
    node: str = "",
    phase: str = "Running",
    ready_since: str | None = None,
    restarts: int = 0,
    created: str | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if ready_since is not None:
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": ready_since}
        ]
    if restarts:
        status["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def test_sorting_active_pods() -> None:
    """Each pod sorts before the next by exactly one rule (upstream's table, in order)."""
    ordered = [
        pod("unscheduled", phase="Pending", created=ago(10)),
        pod("pending", node="n", phase="Pending", created=ago(10)),
        pod("unknown", node="n", phase="Unknown", created=ago(10)),
        pod("running-not-ready", node="n", created=ago(10)),
        pod("ready-without-time", node="n", created=ago(10), ready_since=""),
        pod("ready-recently", node="n", ready_since=ago(1), created=ago(10)),
        pod(
            "ready-long-many-restarts", node="n", ready_since=ago(100), restarts=3, created=ago(10)
        ),
        pod("ready-long-no-creation-time", node="n", ready_since=ago(100)),
        pod("ready-long-newer", node="n", ready_since=ago(100), created=ago(10)),
        pod("ready-long-older", node="n", ready_since=ago(100), created=ago(20)),
    ]
    for seed in range(5):
        shuffled = list(ordered)
        random.Random(seed).shuffle(shuffled)
        got = [p["metadata"]["name"] for p in sort_active_pods(shuffled)]
        assert got == [p["metadata"]["name"] for p in ordered]


@pytest.mark.parametrize(
    ("pod_kwargs", "spec", "want"),
    [
        pytest.param({"phase": "Failed"}, {}, True, id="failed"),
        pytest.param({"phase": "Succeeded"}, {}, False, id="succeeded"),
        pytest.param({"phase": "Running"}, {}, False, id="running"),
        pytest.param(
            {"phase": "Running", "deleted_at": ago(0)}, {}, True, id="deleted before finishing"
        ),
        pytest.param(
            {"phase": "Succeeded", "deleted_at": ago(0)}, {}, False, id="deleted after success"
        ),
        pytest.param(
            {"phase": "Running", "deleted_at": ago(0)},
            {"podReplacementPolicy": "Failed"},
            False,
            id="deleted, replacements wait for Failed",
        ),
        pytest.param(
            {"phase": "Running", "deleted_at": ago(0)},
            {"podFailurePolicy": {"rules": []}},
            False,
            id="deleted, pod failure policy waits for Failed",
        ),
    ],
)
def test_is_pod_failed(pod_kwargs: dict[str, Any], spec: dict[str, Any], want: bool) -> None:
    assert is_pod_failed(new_pod(**pod_kwargs), new_job(**spec)) is want


def test_counts() -> None:
    pods = [
        new_pod("a", ready=True),
        new_pod("b"),
        new_pod("c", ready=True, deleted_at=ago(0)),
        new_pod("d", phase="Failed", deleted_at=ago(0)),
    ]
    assert count_ready_pods(pods) == 2
    assert count_terminating_pods(pods) == 1
