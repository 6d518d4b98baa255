"""The two deletion orders of kcontrol_controllers.activepods side by side: ``ActivePods`` (the
Job controller's) and ``ActivePodsWithRanks`` (the ReplicaSet controller's), on the rules where
they agree and where they differ. Each rule in full: tests/controllers/job/test_job_pods.py and
tests/controllers/replicaset/test_replicaset_ranking.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kcontrol.client import Object
from kcontrol.metatime import format_time
from kcontrol_controllers.activepods import (
    POD_DELETION_COST_ANNOTATION,
    sort_active_pods,
    sort_active_pods_with_ranks,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def pod(
    name: str,
    *,
    node: str = "node",
    phase: str = "Running",
    ready_hours_ago: float | None = None,
    created_hours_ago: float = 24 * 30,
    restarts: int = 0,
    cost: str | None = None,
) -> Object:
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "creationTimestamp": format_time(NOW - timedelta(hours=created_hours_ago)),
    }
    if cost is not None:
        meta["annotations"] = {POD_DELETION_COST_ANNOTATION: cost}
    status: dict[str, Any] = {"phase": phase}
    if ready_hours_ago is not None:
        since = format_time(NOW - timedelta(hours=ready_hours_ago))
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": since}]
    if restarts:
        status["containerStatuses"] = [{"name": "app", "restartCount": restarts}]
    spec = {"nodeName": node} if node else {}
    return {"metadata": meta, "spec": spec, "status": status}


@dataclass
class Case:
    name: str
    pods: list[Object]
    active_pods: list[str]
    """Names in ``ActivePods`` order."""
    with_ranks: list[str]
    """Names in ``ActivePodsWithRanks`` order, ranked by ``ranks`` at ``NOW``."""
    ranks: list[int] = field(default_factory=list)


CASES = [
    Case(
        "both: unscheduled, then pending, then not ready, then ready",
        [
            pod("ready", ready_hours_ago=1),
            pod("not-ready"),
            pod("pending", phase="Pending"),
            pod("unscheduled", node="", phase="Pending"),
        ],
        active_pods=["unscheduled", "pending", "not-ready", "ready"],
        with_ranks=["unscheduled", "pending", "not-ready", "ready"],
    ),
    Case(
        "both: more restarts, then newer",
        [pod("older", created_hours_ago=24 * 60), pod("newer"), pod("restarted", restarts=3)],
        active_pods=["restarted", "newer", "older"],
        with_ranks=["restarted", "newer", "older"],
    ),
    Case(
        "deletion cost: only with ranks",
        [pod("newer-high-cost", created_hours_ago=1, cost="100"), pod("older-low-cost")],
        active_pods=["newer-high-cost", "older-low-cost"],
        with_ranks=["older-low-cost", "newer-high-cost"],
    ),
    Case(
        "rank: only with ranks",
        [pod("newer", created_hours_ago=1), pod("older-doubled-up")],
        ranks=[1, 2],
        active_pods=["newer", "older-doubled-up"],
        with_ranks=["older-doubled-up", "newer"],
    ),
    Case(
        "ready 5h and 8h ago: exact without ranks, one log bucket (by uid) with them",
        [pod("b-ready-5h", ready_hours_ago=5), pod("a-ready-8h", ready_hours_ago=8)],
        active_pods=["b-ready-5h", "a-ready-8h"],
        with_ranks=["a-ready-8h", "b-ready-5h"],
    ),
    Case(
        "no rule decides: the order is kept",
        [pod("first"), pod("second")],
        active_pods=["first", "second"],
        with_ranks=["first", "second"],
    ),
]


def names(pods: list[Object]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sort_active_pods(case: Case) -> None:
    assert names(sort_active_pods(case.pods)) == case.active_pods


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sort_active_pods_with_ranks(case: Case) -> None:
    ranks = case.ranks or [1] * len(case.pods)
    assert names(sort_active_pods_with_ranks(case.pods, ranks, NOW)) == case.with_ranks


def test_sorting_returns_a_new_list_and_leaves_the_pods_alone() -> None:
    pods = [pod("b", created_hours_ago=2), pod("a", created_hours_ago=1)]
    before = [dict(p) for p in pods]
    for ordered in (sort_active_pods(pods), sort_active_pods_with_ranks(pods, [1, 1], NOW)):
        assert ordered is not pods
        assert names(ordered) == ["a", "b"]
    assert pods == before
