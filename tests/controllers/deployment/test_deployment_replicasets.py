"""New/old ReplicaSets, template equality, ordering and counts (upstream
deployment_util_test.go: EqualIgnoreHash, FindNewReplicaSet, FindOldReplicaSets,
GetReplicaCountForReplicaSets, GetDeploymentsForReplicaSet)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deployment_fixtures import new_deployment, new_replica_set, timestamp

from kcontrol_controllers.deployment._replicas import replica_count
from kcontrol_controllers.deployment._replicasets import (
    actual_replica_count,
    clone_selector_and_add_label,
    deployments_selecting,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replica_set,
    find_old_replica_sets,
    is_saturated,
    semantic_equal,
    sorted_by_size_newer,
    sorted_by_size_older,
    terminating_replica_count,
)

HASH = "pod-template-hash"


def template(
    name: str, node: str, annotations: dict[str, str], labels: dict[str, str]
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": annotations, "labels": labels},
        "spec": {"nodeName": node},
    }


@pytest.mark.parametrize(
    ("former", "latter", "expected"),
    [
        pytest.param(
            template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            True,
            id="Same spec, same labels",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            template("foo", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            True,
            id="Same spec, only pod-template-hash label value is different",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {"something": "else"}),
            template("foo", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            True,
            id="Same spec, the former doesn't have pod-template-hash label",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {"something": "else"}),
            template("foo", "foo-node", {}, {HASH: "value-2"}),
            False,
            id="Same spec, the label is different, the former has no hash label",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {HASH: "value-1"}),
            template("foo", "foo-node", {}, {"something": "else"}),
            False,
            id="Same spec, the label is different, the latter has no hash label",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {HASH: "value-1"}),
            template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            False,
            id="Same spec, the label is different, same hash label value",
        ),
        pytest.param(
            template("foo", "foo-node", {"former": "value"}, {HASH: "value-1"}),
            template("foo", "foo-node", {"latter": "value"}, {HASH: "value-1"}),
            False,
            id="Different spec, same labels",
        ),
        pytest.param(
            template("foo-1", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            template("foo-2", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            False,
            id="Different spec, different pod-template-hash label value",
        ),
        pytest.param(
            template("foo-1", "foo-node-1", {}, {"something": "else"}),
            template("foo-2", "foo-node-2", {}, {HASH: "value-2", "something": "else"}),
            False,
            id="Different spec, the former doesn't have pod-template-hash label",
        ),
        pytest.param(
            template("foo", "foo-node-1", {}, {"something": "else"}),
            template("foo", "foo-node-2", {}, {"nothing": "else"}),
            False,
            id="Different spec, different labels",
        ),
        pytest.param(
            template("foo", "foo-node", {}, {HASH: "value-1"}),
            {
                "metadata": {"name": "foo", "creationTimestamp": None},
                "spec": {"nodeName": "foo-node"},
            },
            True,
            id="labels only the hash vs none, null field vs missing (semantic equality)",
        ),
    ],
)
def test_equal_ignore_hash(former: dict[str, Any], latter: dict[str, Any], expected: bool) -> None:
    before = copy.deepcopy((former, latter))
    assert equal_ignore_hash(former, latter) is expected
    assert equal_ignore_hash(latter, former) is expected  # reverse order
    assert (former, latter) == before  # labels untouched


def test_semantic_equality_keeps_meaningful_zero_values() -> None:
    assert semantic_equal({"a": []}, {})
    assert semantic_equal({"a": {"b": None}}, {})
    assert not semantic_equal({"a": 0}, {})
    assert not semantic_equal({"a": ""}, {})
    assert not semantic_equal({"a": [{}]}, {"a": []})


def _new_and_old() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    deployment = new_deployment("nginx", 1)
    new_rs = new_replica_set(deployment, "new", 1, created=20)
    new_rs["spec"]["template"]["metadata"]["labels"][HASH] = "hash"
    new_rs_dup = new_replica_set(deployment, "new-dup", 0, created=10)
    new_rs_dup["spec"]["template"]["metadata"]["labels"][HASH] = "different-hash"
    old_deployment = new_deployment("nginx", 1)
    old_deployment["spec"]["template"]["spec"]["containers"][0]["name"] = "nginx-old-1"
    old_rs = new_replica_set(old_deployment, "old", 1, created=5)
    return deployment, new_rs, new_rs_dup, old_rs


def test_find_new_replica_set() -> None:
    deployment, new_rs, new_rs_dup, old_rs = _new_and_old()
    assert find_new_replica_set(deployment, [new_rs, old_rs]) is new_rs
    # the oldest of two equal templates is the new one
    assert find_new_replica_set(deployment, [new_rs, old_rs, new_rs_dup]) is new_rs_dup
    assert find_new_replica_set(deployment, [old_rs]) is None


def test_find_old_replica_sets() -> None:
    deployment, new_rs, new_rs_dup, old_rs = _new_and_old()

    required, all_old = find_old_replica_sets(deployment, [new_rs, old_rs])
    assert (required, all_old) == ([old_rs], [old_rs])

    required, all_old = find_old_replica_sets(deployment, [old_rs])
    assert all_old == [old_rs]

    # two new ReplicaSets: only the oldest is new; the other is old (and has replicas)
    required, all_old = find_old_replica_sets(deployment, [old_rs, new_rs, new_rs_dup])
    assert all_old == [old_rs, new_rs]
    assert required == [old_rs, new_rs]
    old_rs["spec"]["replicas"] = 0
    required, _ = find_old_replica_sets(deployment, [old_rs, new_rs, new_rs_dup])
    assert required == [new_rs]

    assert find_old_replica_sets(deployment, [new_rs]) == ([], [])


def _counted(
    name: str, spec: int, actual: int, terminating: int | None, observed: int
) -> dict[str, Any]:
    rs = new_replica_set(new_deployment(name, 1), name, spec)
    rs["status"] = {"replicas": actual, "observedGeneration": observed}
    if terminating is not None:
        rs["status"]["terminatingReplicas"] = terminating
    return rs


RS1 = _counted("rs1", 1, 2, 3, 1)
RS2 = _counted("rs2", 2, 3, 1, 0)
RS3 = _counted("unsynced", 3, 0, None, 0)
RS4 = _counted("dropped", 1, 1, None, 1)


@pytest.mark.parametrize(
    ("sets", "count", "actual", "terminating"),
    [
        pytest.param([RS1], 1, 2, 3, id="scaling down rs1"),
        pytest.param([RS1, RS2], 3, 5, 4, id="scaling down rs1 and rs2"),
        pytest.param([RS3], 3, 0, 0, id="scaling up rs3 (never synced counts 0)"),
        pytest.param([RS1, RS2, RS3], 6, 5, 4, id="rs1, rs2 down and rs3 up"),
        pytest.param([RS4], 1, 1, None, id="synced without terminating count is unknown"),
        pytest.param([RS1, RS2, RS3, RS4], 7, 6, None, id="one unknown makes the total unknown"),
    ],
)
def test_replica_counts(
    sets: list[dict[str, Any]], count: int, actual: int, terminating: int | None
) -> None:
    assert replica_count(sets) == count
    assert actual_replica_count(sets) == actual
    assert terminating_replica_count(sets) == terminating


def test_size_orderings_break_ties_by_age() -> None:
    d = new_deployment("foo", 1)
    old_small = new_replica_set(d, "a", 1, created=1)
    old_big = new_replica_set(d, "b", 5, created=2)
    mid_big = new_replica_set(d, "c", 5, created=3)
    new_small = new_replica_set(d, "d", 1, created=4)
    rss = [new_small, old_small, mid_big, old_big]
    assert [r["metadata"]["name"] for r in sorted_by_size_older(rss)] == ["b", "c", "a", "d"]
    assert [r["metadata"]["name"] for r in sorted_by_size_newer(rss)] == ["c", "b", "d", "a"]


def test_find_active_or_latest() -> None:
    d = new_deployment("foo", 1)
    new_rs = new_replica_set(d, "new", 0, created=9)
    older = new_replica_set(d, "older", 0, created=1)
    newer = new_replica_set(d, "newer", 0, created=5)
    assert find_active_or_latest(None, []) is None
    assert find_active_or_latest(new_rs, [older, newer]) is new_rs  # none active: the new one
    assert find_active_or_latest(None, [older, newer]) is newer  # else the newest old one
    newer["spec"]["replicas"] = 2
    assert find_active_or_latest(new_rs, [older, newer]) is newer  # the only active one
    new_rs["spec"]["replicas"] = 1
    assert find_active_or_latest(new_rs, [older, newer]) is None  # several active


@pytest.mark.parametrize(
    ("spec", "desired", "available", "expected"),
    [
        pytest.param(3, "3", 3, True, id="saturated"),
        pytest.param(3, "2", 3, False, id="annotation lags"),
        pytest.param(3, "3", 2, False, id="not all available"),
        pytest.param(2, "3", 3, False, id="smaller"),
        pytest.param(3, None, 3, False, id="no annotation"),
        pytest.param(3, "x", 3, False, id="malformed annotation"),
    ],
)
def test_is_saturated(spec: int, desired: str | None, available: int, expected: bool) -> None:
    d = new_deployment("foo", 3)
    rs = new_replica_set(d, "rs", spec)
    rs["status"]["availableReplicas"] = available
    if desired is not None:
        rs["metadata"]["annotations"] = {"deployment.kubernetes.io/desired-replicas": desired}
    assert is_saturated(d, rs) is expected
    assert is_saturated(d, None) is False


def test_deployments_selecting() -> None:
    deployments = [
        new_deployment(f"deployment-{i}", 1, selector={"app": f"test-{i}"}) for i in range(3)
    ]
    empty = new_deployment("everything", 1)
    empty["spec"]["selector"] = {}
    deployments.append(empty)

    def rs(labels: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": "rs", "namespace": "default", "labels": labels}}

    for i in range(3):
        found = deployments_selecting(rs({"app": f"test-{i}", "label": f"label-{i}"}), deployments)
        assert found == [deployments[i]]
    assert deployments_selecting(rs({"app": "test-3"}), deployments) == []
    assert deployments_selecting(rs({}), deployments) == []  # no labels: no deployment


def test_clone_selector_and_add_label_copies() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "k", "operator": "Exists"}],
    }
    cloned = clone_selector_and_add_label(selector, HASH, "abc")
    assert cloned == {
        "matchLabels": {"app": "web", HASH: "abc"},
        "matchExpressions": [{"key": "k", "operator": "Exists"}],
    }
    assert selector["matchLabels"] == {"app": "web"}
    assert cloned["matchExpressions"] is not selector["matchExpressions"]
    assert timestamp(0) < timestamp(1)
