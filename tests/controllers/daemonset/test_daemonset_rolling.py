"""Rolling-update arithmetic (upstream update_test.go: TestGetUnavailableNumbers and the
findUpdatedPodsOnNode cases; util: SurgeCount, UnavailableCount, AllowsSurge)."""

from __future__ import annotations

from typing import Any

import pytest
from daemonset_fixtures import (
    SIMPLE_DAEMON_SET_LABEL,
    daemon_pod,
    mark_pod_ready,
    new_daemon_set,
    new_node,
    on_delete,
    rolling_update,
    surge,
)

from kcontrol_controllers.daemonset._rolling import (
    RollingCounts,
    allows_surge,
    find_updated_pods_on_node,
    surge_count,
    unavailable_count,
    updated_desired_node_counts,
)
from kcontrol_controllers.intstr import IntOrPercentError

Pods = dict[str, list[dict[str, Any]]]


def _nodes(count: int) -> list[dict[str, Any]]:
    return [new_node(f"node-{i}") for i in range(count)]


def _ready(name: str, node: str, *, deleting: bool = False) -> dict[str, Any]:
    pod = mark_pod_ready(daemon_pod(name, node, SIMPLE_DAEMON_SET_LABEL))
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-11-28T12:00:00Z"
    return pod


@pytest.mark.parametrize(
    ("strategy", "node_count", "node_to_pods", "expected", "empty_nodes"),
    [
        pytest.param(rolling_update(0), 0, {}, RollingCounts(0, 0, 0), 0, id="No nodes"),
        pytest.param(
            rolling_update(1),
            2,
            {"node-0": [_ready("pod-0", "node-0")], "node-1": [_ready("pod-1", "node-1")]},
            RollingCounts(0, 1, 2),
            0,
            id="Two nodes with ready pods",
        ),
        pytest.param(
            rolling_update(0),
            2,
            {"node-0": [_ready("pod-0", "node-0")]},
            RollingCounts(0, 1, 2),
            1,
            id="Two nodes, one node without pods",
        ),
        pytest.param(
            surge(0),
            2,
            {"node-0": [_ready("pod-0", "node-0")]},
            RollingCounts(0, 1, 2),
            1,
            id="Two nodes, one node without pods, surge",
        ),
        pytest.param(
            rolling_update("50%"),
            2,
            {"node-0": [_ready("pod-0", "node-0")], "node-1": [_ready("pod-1", "node-1")]},
            RollingCounts(0, 1, 2),
            0,
            id="Two nodes with pods, MaxUnavailable in percents",
        ),
        pytest.param(
            surge("50%"),
            2,
            {"node-0": [_ready("pod-0", "node-0")], "node-1": [_ready("pod-1", "node-1")]},
            RollingCounts(1, 0, 2),
            0,
            id="Two nodes with pods, MaxSurge in percents",
        ),
        pytest.param(
            surge("100%"),
            2,
            {"node-0": [_ready("pod-0", "node-0")], "node-1": [_ready("pod-1", "node-1")]},
            RollingCounts(2, 0, 2),
            0,
            id="Two nodes with pods, MaxSurge is 100%",
        ),
        pytest.param(
            rolling_update("50%"),
            3,
            {
                "node-0": [_ready("pod-0", "node-0")],
                "node-1": [_ready("pod-1", "node-1", deleting=True)],
            },
            RollingCounts(0, 2, 3),
            1,
            id="Three nodes, 50% unavailable rounds up, pod terminating",
        ),
        pytest.param(
            surge("34%"), 3, {}, RollingCounts(2, 0, 3), 3, id="surge rounds up too (1.02 -> 2)"
        ),
        pytest.param(on_delete(), 2, {}, RollingCounts(0, 1, 2), 2, id="OnDelete: 0 and 0 -> 1"),
        pytest.param(
            {"type": "RollingUpdate"},
            2,
            {},
            RollingCounts(0, 1, 2),
            2,
            id="RollingUpdate without parameters",
        ),
    ],
)
def test_updated_desired_node_counts(
    strategy: dict[str, Any],
    node_count: int,
    node_to_pods: Pods,
    expected: RollingCounts,
    empty_nodes: int,
) -> None:
    ds = new_daemon_set("x", strategy)
    mapping = {node: list(pods) for node, pods in node_to_pods.items()}
    assert updated_desired_node_counts(ds, _nodes(node_count), mapping) == expected
    assert sum(1 for pods in mapping.values() if not pods) == empty_nodes
    assert len(mapping) == max(node_count, len(node_to_pods))


def test_nodes_that_should_not_run_are_neither_counted_nor_added() -> None:
    ds = new_daemon_set("x", rolling_update("100%"), nodeSelector={"role": "edge"})
    nodes = [new_node("edge-1", {"role": "edge"}), new_node("core-1", {"role": "core"})]
    mapping: Pods = {}
    assert updated_desired_node_counts(ds, nodes, mapping) == RollingCounts(0, 1, 1)
    assert mapping == {"edge-1": []}


def test_tainted_node_is_not_desired() -> None:
    ds = new_daemon_set("x", rolling_update(1))
    nodes = [new_node("a"), new_node("b", taints=[{"key": "k", "effect": "NoSchedule"}])]
    assert updated_desired_node_counts(ds, nodes, {}).desired_number_scheduled == 1


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        pytest.param(
            {"type": "RollingUpdate", "rollingUpdate": {}},
            "invalid value for MaxUnavailable: nil value for IntOrString",
            id="missing maxUnavailable",
        ),
        pytest.param(rolling_update("fifty"), "invalid value for MaxUnavailable", id="not %"),
        pytest.param(surge("x%"), "invalid value for MaxSurge", id="bad surge"),
    ],
)
def test_updated_desired_node_counts_errors(strategy: dict[str, Any], message: str) -> None:
    with pytest.raises(IntOrPercentError, match=message):
        updated_desired_node_counts(new_daemon_set("x", strategy), _nodes(1), {})


@pytest.mark.parametrize(
    ("strategy", "number", "surge_expected", "unavailable_expected"),
    [
        pytest.param(on_delete(), 10, 0, 0, id="OnDelete has neither"),
        pytest.param({"type": "RollingUpdate"}, 10, 0, 0, id="no rollingUpdate"),
        pytest.param(rolling_update(3), 10, 0, 3, id="no maxSurge is 0"),
        pytest.param(surge("39%"), 10, 4, 0, id="39% of 10 surges 4"),
        pytest.param(rolling_update("39%"), 10, 0, 4, id="39% of 10 unavailable is 4"),
        pytest.param(rolling_update("1%"), 10, 0, 1, id="1% rounds up to 1"),
        pytest.param(rolling_update("0%"), 10, 0, 0, id="0% is 0"),
        pytest.param(rolling_update("100%"), 0, 0, 0, id="of no nodes"),
    ],
)
def test_surge_and_unavailable_counts(
    strategy: dict[str, Any], number: int, surge_expected: int, unavailable_expected: int
) -> None:
    ds = new_daemon_set("x", strategy)
    assert surge_count(ds, number) == surge_expected
    assert unavailable_count(ds, number) == unavailable_expected


@pytest.mark.parametrize(
    ("strategy", "allowed"),
    [
        pytest.param(surge(1), True, id="one"),
        pytest.param(surge("10%"), True, id="10% of one node rounds up"),
        pytest.param(surge(0), False, id="zero"),
        pytest.param(surge("0%"), False, id="zero percent"),
        pytest.param(surge("lots"), False, id="malformed"),
        pytest.param(rolling_update(1), False, id="no surge"),
        pytest.param({"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}}, False, id="OnDelete"),
    ],
)
def test_allows_surge(strategy: dict[str, Any], allowed: bool) -> None:
    assert allows_surge(new_daemon_set("x", strategy)) is allowed


# -- old and new pods on a node ----------------------------------------------------------------

HASH = "abc123"


def _pod(name: str, hash_: str = "", *, generation: str = "", deleting: bool = False) -> Any:
    labels = {}
    if hash_:
        labels["controller-revision-hash"] = hash_
    if generation:
        labels["pod-template-generation"] = generation
    pod = daemon_pod(name, "node-0", labels)
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-11-28T12:00:00Z"
    return pod


def _names(result: Any) -> tuple[str | None, str | None, bool]:
    new, old, ok = result
    return (
        None if new is None else new["metadata"]["name"],
        None if old is None else old["metadata"]["name"],
        ok,
    )


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([], (None, None, True), id="no pods"),
        pytest.param([_pod("new", HASH)], ("new", None, True), id="one new"),
        pytest.param([_pod("old", "zzz")], (None, "old", True), id="one old"),
        pytest.param([_pod("old", "zzz"), _pod("new", HASH)], ("new", "old", True), id="both"),
        pytest.param([_pod("n1", HASH), _pod("n2", HASH)], (None, None, False), id="two new"),
        pytest.param([_pod("o1", "x"), _pod("o2", "y")], (None, None, False), id="two old"),
        pytest.param(
            [_pod("o1", "x", deleting=True), _pod("o2", "y")],
            (None, "o2", True),
            id="a pod being deleted is ignored",
        ),
        pytest.param(
            [_pod("gen", generation="7")], ("gen", None, True), id="template generation matches"
        ),
    ],
)
def test_find_updated_pods_on_node(pods: list[Any], expected: tuple[Any, ...]) -> None:
    ds = new_daemon_set("x", rolling_update(1))
    ds["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": "7"}
    assert _names(find_updated_pods_on_node(ds, pods, HASH)) == expected


def test_find_updated_pods_ignores_an_unreadable_generation() -> None:
    ds = new_daemon_set("x", rolling_update(1))
    ds["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": "seven"}
    result = find_updated_pods_on_node(ds, [_pod("gen", generation="7")], HASH)
    assert _names(result) == (None, "gen", True)
