"""The pure pieces of the sync: one rolling-update step, which revisions go, matching a
revision, the failed-pods backoff, status counts - table-driven, each case named."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from daemonset_fixtures import (
    NOW,
    SIMPLE_DAEMON_SET_LABEL,
    daemon_pod,
    mark_pod_ready,
    new_daemon_set,
    new_node,
    rolling_update,
    surge,
)

from kcontrol.clock import FakeClock
from kcontrol_controllers.daemonset._backoff import FailedPodsBackoff
from kcontrol_controllers.daemonset._history import (
    get_patch,
    match,
    revisions_to_delete,
    template_hash,
)
from kcontrol_controllers.daemonset._status import calculate_counts
from kcontrol_controllers.daemonset._update import plan_rolling_update

NEW, OLD = "new", "old"


def pod(name: str, node: str, hash_: str, *, available: bool = True, ready: bool = True) -> Any:
    p = daemon_pod(name, node, {**SIMPLE_DAEMON_SET_LABEL, "controller-revision-hash": hash_})
    if ready:
        mark_pod_ready(p, NOW - timedelta(minutes=1) if available else NOW)
    return p


def plan(
    strategy: dict[str, Any], pods: dict[str, list[Any]], nodes: list[Any] | None = None
) -> Any:
    ds = new_daemon_set(strategy=strategy)
    ds["spec"]["minReadySeconds"] = 10
    nodes = nodes if nodes is not None else [new_node(n) for n in pods]
    return plan_rolling_update(
        ds, {n["metadata"]["name"]: n for n in nodes}, copy.deepcopy(pods), NEW, NOW
    )


@pytest.mark.parametrize(
    ("strategy", "pods", "deleted", "created"),
    [
        pytest.param(
            rolling_update(1),
            {"a": [pod("a1", "a", OLD)], "b": [pod("b1", "b", OLD)]},
            1,
            [],
            id="max-unavailable-1-deletes-one",
        ),
        pytest.param(
            rolling_update(1),
            {"a": [pod("a1", "a", NEW, available=False)], "b": [pod("b1", "b", OLD)]},
            0,
            [],
            id="unavailable-new-pod-uses-the-budget",
        ),
        pytest.param(
            rolling_update(1),
            {"a": [], "b": [pod("b1", "b", OLD)]},
            0,
            [],
            id="node-without-pod-counts-unavailable",
        ),
        pytest.param(
            rolling_update(1),
            {"a": [pod("a1", "a", OLD, ready=False)], "b": [pod("b1", "b", OLD, ready=False)]},
            2,
            [],
            id="unavailable-old-pods-all-replaced",
        ),
        pytest.param(
            rolling_update("100%"),
            {n: [pod(f"{n}1", n, OLD)] for n in "abc"},
            3,
            [],
            id="percentage-of-all",
        ),
        pytest.param(
            surge(1),
            {"a": [pod("a1", "a", OLD)], "b": [pod("b1", "b", OLD)]},
            0,
            ["a"],
            id="surge-one-candidate",
        ),
        pytest.param(
            surge(1),
            {"a": [pod("a1", "a", OLD), pod("a2", "a", NEW)], "b": [pod("b1", "b", OLD)]},
            1,
            ["b"],
            id="surge-new-available-old-goes-next-surges",
        ),
        pytest.param(
            surge(1),
            {
                "a": [pod("a1", "a", OLD), pod("a2", "a", NEW, available=False)],
                "b": [pod("b1", "b", OLD)],
            },
            0,
            [],
            id="surge-waiting-for-new-pod",
        ),
        pytest.param(
            surge(1),
            {"a": [pod("a1", "a", OLD, ready=False)], "b": [pod("b1", "b", OLD)]},
            0,
            ["a", "b"],
            id="surge-unavailable-old-replaced-beyond-surge",
        ),
    ],
)
def test_rolling_plan(
    strategy: dict[str, Any], pods: dict[str, list[Any]], deleted: int, created: list[str]
) -> None:
    result = plan(strategy, pods)
    assert len(result.pods_to_delete) == deleted
    assert sorted(result.nodes_needing_pods) == created
    old_pods = {
        p["metadata"]["name"]
        for ps in pods.values()
        for p in ps
        if p["metadata"]["labels"]["controller-revision-hash"] == OLD
    }
    assert set(result.pods_to_delete) <= old_pods


def test_surge_moves_off_a_node_only_when_availability_allows() -> None:
    """An old pod on a node the DaemonSet left goes only while more pods are available than
    nodes should run them."""
    nodes = [new_node("a"), new_node("gone-from", {"x": "y"})]
    ds_pods = {"a": [pod("a1", "a", OLD)], "gone-from": [pod("g1", "gone-from", OLD)]}
    ds = new_daemon_set(strategy=surge(1), nodeSelector={"keep": "me"})
    nodes[0]["metadata"]["labels"] = {"keep": "me"}
    result = plan_rolling_update(
        ds, {n["metadata"]["name"]: n for n in nodes}, copy.deepcopy(ds_pods), NEW, NOW
    )
    # two available pods, one node should run: the stray may go; "a" surges.
    assert result.pods_to_delete == ["g1"]
    assert result.nodes_needing_pods == ["a"]


def test_revisions_to_delete_oldest_first_live_hashes_kept() -> None:
    def rev(name: str, number: int) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"controller-revision-hash": name}},
            "revision": number,
        }

    ds = new_daemon_set()
    ds["spec"]["revisionHistoryLimit"] = 1
    old = [rev("r3", 3), rev("r1", 1), rev("r2", 2)]
    live = [daemon_pod("p", "n", {"controller-revision-hash": "r1"})]
    assert revisions_to_delete(ds, old, live) == ["r2", "r3"]
    assert revisions_to_delete(ds, old, []) == ["r1", "r2"]
    ds["spec"]["revisionHistoryLimit"] = 5
    assert revisions_to_delete(ds, old, []) == []


def test_match_compares_parsed_data_and_ignores_go_null_timestamp() -> None:
    ds = new_daemon_set()
    revision = {"data": get_patch(ds)}
    assert match(ds, revision)
    revision["data"]["spec"]["template"]["metadata"]["creationTimestamp"] = None
    assert match(ds, revision)
    changed = copy.deepcopy(ds)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    assert not match(changed, revision)


def test_template_hash_is_stable_and_counts_collisions() -> None:
    template = new_daemon_set()["spec"]["template"]
    assert template_hash(template, None) == template_hash(copy.deepcopy(template), None)
    assert template_hash(template, None) != template_hash(template, 0)
    assert template_hash(template, 0) != template_hash(template, 1)
    # Pinned: the hash names revisions and labels pods, so it must never change.
    assert template_hash({"metadata": {"labels": {"a": "b"}}}, None) == template_hash(
        {"metadata": {"labels": {"a": "b"}}}, None
    )


def test_failed_pods_backoff_doubles_caps_and_expires() -> None:
    clock = FakeClock()
    backoff = FailedPodsBackoff(clock, initial=1, maximum=4)
    now = clock.now()
    assert not backoff.is_in_backoff_since_update("k", now)
    backoff.next("k", now)
    assert backoff.get("k") == 1 and backoff.is_in_backoff_since_update("k", now + 0.5)
    assert not backoff.is_in_backoff_since_update("k", now + 1)
    for step in (2, 4, 4):
        backoff.next("k", now)
        assert backoff.get("k") == step
    # Not stepped for twice the maximum: expired, starts again, and is swept.
    assert not backoff.is_in_backoff_since_update("k", now + 9)
    clock.step(9)
    backoff.gc()
    assert len(backoff) == 0
    backoff.next("k", clock.now())
    assert backoff.get("k") == 1


def test_counts_first_pod_of_a_node_decides() -> None:
    ds = new_daemon_set()
    ds["spec"]["minReadySeconds"] = 10
    nodes = [new_node("a"), new_node("b"), new_node("c")]
    by_node = {
        "a": [pod("a-new", "a", NEW, available=False), pod("a-old", "a", OLD)],
        "b": [pod("b1", "b", OLD, ready=False)],
    }
    by_node["a"][0]["metadata"]["creationTimestamp"] = "2026-11-28T11:59:00Z"
    by_node["a"][1]["metadata"]["creationTimestamp"] = "2026-11-28T11:00:00Z"
    counts = calculate_counts(ds, nodes, by_node, NEW, NOW)
    assert counts._asdict() == {
        "desiredNumberScheduled": 3,
        "currentNumberScheduled": 2,
        "numberMisscheduled": 0,
        "numberReady": 1,  # a-old, the oldest on a
        "updatedNumberScheduled": 0,
        "numberAvailable": 1,
        "numberUnavailable": 2,
    }
