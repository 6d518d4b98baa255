"""The deletion ranking, table-driven (upstream TestSortingActivePodsWithRanks and
TestGetPodsToDelete)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kcontrol.client import Object
from kcontrol_controllers.activepods import (
    POD_DELETION_COST_ANNOTATION,
    RankedPod,
    compare_for_deletion,
    max_container_restarts,
    pod_deletion_cost,
)
from kcontrol_controllers.replicaset._ranking import (
    deletion_age_ratios,
    pods_to_delete,
    ranks_by_related_pods_on_same_node,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ts(moment: datetime | None) -> str | None:
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    node: str = "",
    phase: str = "Running",
    *,
    ready: bool = False,
    restarts: int = 0,
    sidecar_restarts: int = 0,
    ready_since: datetime | None = None,
    created: datetime | None = None,
    cost: str | None = None,
    uid: str | None = None,
) -> Object:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}
    if created is not None:
        meta["creationTimestamp"] = ts(created)
    if cost is not None:
        meta["annotations"] = {POD_DELETION_COST_ANNOTATION: cost}
    status: dict[str, Any] = {"phase": phase}
    if ready:
        condition: dict[str, Any] = {"type": "Ready", "status": "True"}
        if ready_since is not None:
            condition["lastTransitionTime"] = ts(ready_since)
        status["conditions"] = [condition]
        status["containerStatuses"] = [{"name": "app", "restartCount": restarts}]
        status["initContainerStatuses"] = [{"name": "sidecar", "restartCount": sidecar_restarts}]
    spec: dict[str, Any] = {
        "initContainers": [{"name": "sidecar", "restartPolicy": "Always"}],
        "containers": [{"name": "app"}],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": status}


MONTH = NOW - timedelta(days=30)
H2, H5, H8 = (NOW - timedelta(hours=h) for h in (2, 5, 8))

UNSCHEDULED = pod("unscheduled", "", "Pending")
PENDING = pod("pending", "node", "Pending")
UNKNOWN = pod("unknown-phase", "node", "Unknown")
NOT_READY = pod("not-ready", "node")
READY_NO_TIME = pod("ready-no-last-transition-time", "node", ready=True)
READY_NOW = pod("ready-now", "node", ready=True, ready_since=NOW, created=NOW)
READY_THEN = pod("ready-then", "node", ready=True, ready_since=MONTH, created=MONTH)
HIGH_RESTARTS = pod(
    "ready-high-restarts", "node", ready=True, restarts=9001, ready_since=NOW, created=NOW
)
HIGH_SIDECAR = pod(
    "ready-high-sidecar-restarts",
    "node",
    ready=True,
    restarts=9001,
    sidecar_restarts=9001,
    ready_since=NOW,
    created=NOW,
)
READY_NOW_CREATED_THEN = pod(
    "ready-now-created-then", "node", ready=True, ready_since=NOW, created=MONTH
)
LOW_COST = pod("low-cost", "node", ready=True, ready_since=NOW, created=MONTH, cost="10")
HIGH_COST = pod("high-cost", "node", ready=True, ready_since=NOW, created=MONTH, cost="100")
UNSCHEDULED_5H = pod("unscheduled-5h", "", "Pending", created=H5)
UNSCHEDULED_8H = pod("unscheduled-8h", "", "Pending", created=H8)
READY_2H = pod("ready-2h", "", ready=True, ready_since=H2, created=MONTH)
READY_5H = pod("ready-5h", "", ready=True, ready_since=H5, created=MONTH)
READY_8H = pod("ready-8h", "", ready=True, ready_since=H8, created=MONTH)


@dataclass
class Order:
    name: str
    first: tuple[Object, int]
    second: tuple[Object, int]


ORDERS = [
    Order("unscheduled before scheduled, whatever the rank", (UNSCHEDULED, 1), (PENDING, 2)),
    Order("unscheduled before scheduled (rank the other way)", (UNSCHEDULED, 2), (PENDING, 1)),
    Order("pending before unknown", (PENDING, 1), (UNKNOWN, 2)),
    Order("unknown before running", (UNKNOWN, 1), (NOT_READY, 2)),
    Order("not ready before ready", (NOT_READY, 1), (READY_NO_TIME, 1)),
    Order("ready without a time before ready with one", (READY_NO_TIME, 1), (READY_NOW, 1)),
    Order("higher rank (more co-located) first", (READY_NOW, 2), (READY_NO_TIME, 1)),
    Order("ready more recently first", (READY_NOW, 1), (READY_THEN, 1)),
    Order("rank beats ready time", (READY_NOW, 2), (READY_THEN, 1)),
    Order("more restarts first", (HIGH_RESTARTS, 1), (READY_NOW, 1)),
    Order("then more sidecar restarts first", (HIGH_SIDECAR, 1), (HIGH_RESTARTS, 1)),
    Order("rank beats restarts", (READY_NOW, 2), (HIGH_RESTARTS, 1)),
    Order("created more recently first", (READY_NOW, 1), (READY_NOW_CREATED_THEN, 1)),
    Order("rank beats creation time", (READY_NOW_CREATED_THEN, 2), (READY_NOW, 1)),
    Order("lower deletion cost first, rank aside", (LOW_COST, 2), (HIGH_COST, 1)),
    Order("ready 2h before ready 5h (different log buckets)", (READY_2H, 1), (READY_5H, 1)),
]


@pytest.mark.parametrize("case", ORDERS, ids=lambda c: c.name)
def test_deletion_order(case: Order) -> None:
    first, second = RankedPod(*case.first), RankedPod(*case.second)
    assert compare_for_deletion(first, second, NOW) < 0
    assert compare_for_deletion(second, first, NOW) > 0


EQUAL = [
    ("unscheduled", UNSCHEDULED, UNSCHEDULED),
    ("pending", PENDING, PENDING),
    ("unknown", UNKNOWN, UNKNOWN),
    ("not ready", NOT_READY, NOT_READY),
    ("ready now, created then", READY_NOW_CREATED_THEN, READY_NOW_CREATED_THEN),
    ("ready then", READY_THEN, READY_THEN),
    ("high restarts", HIGH_RESTARTS, HIGH_RESTARTS),
    ("created 5h and 8h ago: same log bucket, same (empty) uid", UNSCHEDULED_5H, UNSCHEDULED_8H),
    ("ready 5h and 8h ago: same log bucket, same (empty) uid", READY_5H, READY_8H),
]


@pytest.mark.parametrize(("name", "a", "b"), EQUAL, ids=[e[0] for e in EQUAL])
def test_no_rule_decides(name: str, a: Object, b: Object) -> None:
    a, b = _with_uid(a, ""), _with_uid(b, "")
    assert compare_for_deletion(RankedPod(a, 1), RankedPod(b, 1), NOW) == 0


def _with_uid(p: Object, uid: str) -> Object:
    return {**p, "metadata": {**p["metadata"], "uid": uid}}


def test_same_log_bucket_is_decided_by_uid() -> None:
    """5h and 8h ago share the bucket 2^44 ns, so the smaller UID goes first - and restarts
    are not looked at."""
    a = _with_uid(READY_5H, "a")
    b = {
        **_with_uid(READY_8H, "b"),
        "status": {**READY_8H["status"], "containerStatuses": [{"restartCount": 5}]},
    }
    assert compare_for_deletion(RankedPod(a, 1), RankedPod(b, 1), NOW) < 0
    assert compare_for_deletion(RankedPod(b, 1), RankedPod(a, 1), NOW) > 0


def test_without_a_reference_time_times_compare_exactly() -> None:
    assert compare_for_deletion(RankedPod(READY_5H, 1), RankedPod(READY_8H, 1), None) < 0


@pytest.mark.parametrize(
    ("value", "cost"),
    [
        (None, 0),
        ("10", 10),
        ("-5", -5),
        ("0", 0),
        ("-007", -7),
        ("+10", 0),
        ("008", 0),
        ("1.5", 0),
        ("1_000", 0),
        (" 1", 0),
        ("", 0),
        ("2147483647", 2147483647),
        ("2147483648", 0),
        ("-2147483648", -2147483648),
        ("-2147483649", 0),
        # longer than Python converts (4,300 digits): out of range, 0 as any parse error
        pytest.param("9" * 5000, 0, id="5000 digits"),
        pytest.param("-" + "9" * 5000, 0, id="minus 5000 digits"),
        pytest.param("-" + "0" * 5000 + "3", -3, id="minus 5000 zeros then 3"),
    ],
)
def test_pod_deletion_cost(value: str | None, cost: int) -> None:
    assert pod_deletion_cost(pod("p", cost=value)) == cost


def test_max_container_restarts_counts_only_sidecars_among_init_containers() -> None:
    p = pod("p", ready=True, restarts=3, sidecar_restarts=7)
    p["spec"]["initContainers"].append({"name": "init"})
    p["status"]["initContainerStatuses"].append({"name": "init", "restartCount": 50})
    assert max_container_restarts(p) == (3, 7)


def test_ranks_count_active_related_pods_per_node() -> None:
    a1, a2, b1, unscheduled = pod("a1", "a"), pod("a2", "a"), pod("b1", "b"), pod("u")
    gone = {**pod("a3", "a"), "status": {"phase": "Succeeded"}}
    related = [a1, a2, b1, unscheduled, gone, pod("c1", "c")]
    assert ranks_by_related_pods_on_same_node([a1, b1, unscheduled], related) == [2, 1, 1]


# -- which pods go (upstream TestGetPodsToDelete) ------------------------------------------------

SCHED_PENDING = pod("scheduled-pending", "fake-node", "Pending")
RUNNING_NOT_READY = pod("scheduled-running-not-ready", "fake-node")
READY_NODE1 = pod("ready-on-node-1", "fake-node-1", ready=True)
READY_NODE2 = pod("ready-on-node-2", "fake-node-2", ready=True)


@dataclass
class DeleteCase:
    name: str
    pods: list[Object]
    count: int
    expected: list[Object]
    related: list[Object] | None = None


DELETE_CASES = [
    DeleteCase("nothing to delete", [], 0, []),
    DeleteCase(
        "all of them, in the given order",
        [RUNNING_NOT_READY, READY_NODE1],
        2,
        [RUNNING_NOT_READY, READY_NODE1],
    ),
    DeleteCase("not ready first", [READY_NODE1, RUNNING_NOT_READY], 1, [RUNNING_NOT_READY]),
    DeleteCase("unscheduled first", [SCHED_PENDING, UNSCHEDULED], 1, [UNSCHEDULED]),
    DeleteCase(
        "not ready twice",
        [READY_NODE1, RUNNING_NOT_READY, RUNNING_NOT_READY],
        2,
        [RUNNING_NOT_READY, RUNNING_NOT_READY],
    ),
    DeleteCase(
        "co-located with a related pod first",
        [READY_NODE1, READY_NODE2],
        1,
        [READY_NODE2],
        related=[READY_NODE1, READY_NODE2, READY_NODE2],
    ),
    DeleteCase("pending before running", [SCHED_PENDING, RUNNING_NOT_READY], 1, [SCHED_PENDING]),
    DeleteCase(
        "phases and conditions",
        [READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHED_PENDING, UNSCHEDULED],
        3,
        [UNSCHEDULED, SCHED_PENDING, RUNNING_NOT_READY],
    ),
]


@pytest.mark.parametrize("case", DELETE_CASES, ids=lambda c: c.name)
def test_pods_to_delete(case: DeleteCase) -> None:
    related = case.related if case.related is not None else case.pods
    chosen = pods_to_delete(case.pods, related, case.count, NOW)
    assert [p["metadata"]["name"] for p in chosen] == [p["metadata"]["name"] for p in case.expected]


def test_pods_to_delete_reports_age_ratios_only_when_sorting() -> None:
    young = pod("young", "n", ready=True, ready_since=NOW, created=NOW - timedelta(seconds=10))
    old = pod("old", "n", ready=True, ready_since=MONTH, created=NOW - timedelta(seconds=35))
    ratios: list[float] = []
    assert pods_to_delete([old, young], [old, young], 1, NOW, ratios.append) == [young]
    assert ratios == [1.0]
    ratios.clear()
    pods_to_delete([old, young], [old, young], 2, NOW, ratios.append)
    assert ratios == []


def test_deletion_age_ratio_uses_integer_division_of_milliseconds() -> None:
    young = pod("young", ready=True, created=NOW - timedelta(seconds=10))
    old = pod("old", ready=True, created=NOW - timedelta(seconds=35))
    not_ready = pod("not-ready", created=NOW - timedelta(seconds=100))
    assert deletion_age_ratios([old, not_ready, young], 2, NOW) == [3.0]
