"""Which nodes a DaemonSet runs on (upstream daemon_controller_test.go: TestNodeShouldRunDaemonPod
and the taint, toleration, node selector and node affinity cases of the sync tests -
TestTaintedNodeDaemonDoesNotLaunchIntolerantPod, TestTaintedNodeDaemonLaunchesToleratePod,
TestNotReadyNodeDaemonLaunchesPod, TestUnreachableNodeDaemonLaunchesPod,
TestTaintPressureNodeDaemonLaunchPod, TestNodeAffinityDaemonLaunchesPods, ... - asked of
NodeShouldRunDaemonPod directly)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from daemonset_fixtures import (
    NO_EXECUTE_TAINTS,
    NO_SCHEDULE_TAINTS,
    NO_SCHEDULE_TOLERATIONS,
    SIMPLE_DAEMON_SET_LABEL,
    SIMPLE_DAEMON_SET_LABEL2,
    new_daemon_set,
    new_node,
    update_strategies,
)

from kcontrol_controllers.daemonset._placement import (
    DaemonPlacement,
    Placement,
    Predicates,
    node_should_run_daemon_pod,
    predicates,
)
from kcontrol_controllers.daemonset._pods import new_pod

RUN = Placement(should_run=True, should_continue_running=True)
KEEP_ONLY = Placement(should_run=False, should_continue_running=True)
NEVER = Placement(should_run=False, should_continue_running=False)


def _required(*expressions: dict[str, Any], fields: list[Any] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = list(expressions)
    if fields:
        term["matchFields"] = fields
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def _taint(key: str, effect: str, value: str = "") -> dict[str, Any]:
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


# Every case runs against the node "test-node" labelled SIMPLE_DAEMON_SET_LABEL.
CASES = [
    pytest.param({}, {}, RUN, id="ShouldRunDaemonPod"),
    pytest.param({"nodeName": "other-node"}, {}, NEVER, id="ErrPodNotMatchHostName"),
    pytest.param({"nodeName": "test-node"}, {}, RUN, id="template names this node"),
    pytest.param(
        {"nodeSelector": SIMPLE_DAEMON_SET_LABEL2}, {}, NEVER, id="ErrNodeSelectorNotMatch"
    ),
    pytest.param({"nodeSelector": SIMPLE_DAEMON_SET_LABEL}, {}, RUN, id="node selector matches"),
    pytest.param(
        {"affinity": _required({"key": "type", "operator": "In", "values": ["test"]})},
        {},
        NEVER,
        id="ErrPodAffinityNotMatch",
    ),
    pytest.param(
        {"affinity": _required({"key": "type", "operator": "In", "values": ["production"]})},
        {},
        RUN,
        id="node affinity matches",
    ),
    pytest.param(
        {
            "affinity": _required(
                fields=[{"key": "metadata.name", "operator": "In", "values": ["test-node"]}]
            )
        },
        {},
        RUN,
        id="pinned to this node by matchFields",
    ),
    pytest.param(
        {
            "affinity": _required(
                fields=[{"key": "metadata.name", "operator": "In", "values": ["other-node"]}]
            )
        },
        {},
        NEVER,
        id="pinned to another node by matchFields",
    ),
    pytest.param(
        {"affinity": _required({"key": "type", "operator": "Near", "values": ["x"]})},
        {},
        NEVER,
        id="node affinity that does not parse matches nothing",
    ),
    pytest.param(
        {"nodeSelector": SIMPLE_DAEMON_SET_LABEL2},
        {"taints": NO_EXECUTE_TAINTS},
        NEVER,
        id="affinity is checked before taints",
    ),
    pytest.param({}, {"unschedulable": True}, RUN, id="ShouldRunDaemonPodOnUnschedulableNode"),
    pytest.param(
        {},
        {"taints": [_taint("node.kubernetes.io/unschedulable", "NoSchedule")]},
        RUN,
        id="cordoned node's taint is tolerated",
    ),
    pytest.param({}, {"taints": NO_SCHEDULE_TAINTS}, KEEP_ONLY, id="intolerant of NoSchedule"),
    pytest.param(
        {"tolerations": NO_SCHEDULE_TOLERATIONS},
        {"taints": NO_SCHEDULE_TAINTS},
        RUN,
        id="tolerates NoSchedule",
    ),
    pytest.param({}, {"taints": NO_EXECUTE_TAINTS}, NEVER, id="intolerant of NoExecute"),
    pytest.param(
        {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]},
        {"taints": NO_EXECUTE_TAINTS},
        RUN,
        id="tolerates NoExecute",
    ),
    pytest.param(
        {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]},
        {"taints": [*NO_EXECUTE_TAINTS, _taint("other", "NoSchedule")]},
        KEEP_ONLY,
        id="NoExecute tolerated, NoSchedule not",
    ),
    pytest.param(
        {"tolerations": NO_SCHEDULE_TOLERATIONS},
        {"taints": [*NO_SCHEDULE_TAINTS, _taint("other", "NoExecute")]},
        NEVER,
        id="NoSchedule tolerated, NoExecute not",
    ),
    pytest.param(
        {}, {"taints": [_taint("soft", "PreferNoSchedule")]}, RUN, id="PreferNoSchedule ignored"
    ),
    pytest.param(
        {},
        {"taints": [_taint("node.kubernetes.io/not-ready", "NoExecute")]},
        RUN,
        id="NotReadyNodeDaemonLaunchesPod",
    ),
    pytest.param(
        {},
        {"taints": [_taint("node.kubernetes.io/unreachable", "NoExecute")]},
        RUN,
        id="UnreachableNodeDaemonLaunchesPod",
    ),
    pytest.param(
        {},
        {
            "taints": [
                _taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                _taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                _taint("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ]
        },
        RUN,
        id="TaintPressureNodeDaemonLaunchPod",
    ),
    pytest.param(
        {},
        {"taints": [_taint("node.kubernetes.io/network-unavailable", "NoSchedule")]},
        KEEP_ONLY,
        id="network unavailable: not for pods on the pod network",
    ),
    pytest.param(
        {"hostNetwork": True},
        {"taints": [_taint("node.kubernetes.io/network-unavailable", "NoSchedule")]},
        RUN,
        id="network unavailable: fine for host-network pods",
    ),
    pytest.param(
        {},
        {"taints": [_taint("node.kubernetes.io/not-ready", "NoSchedule")]},
        KEEP_ONLY,
        id="the not-ready toleration is for NoExecute only",
    ),
]


@pytest.mark.parametrize(("template_spec", "node_spec", "expected"), CASES)
@pytest.mark.parametrize("strategy", update_strategies(), ids=["OnDelete", "RollingUpdate"])
def test_node_should_run_daemon_pod(
    template_spec: dict[str, Any],
    node_spec: dict[str, Any],
    expected: Placement,
    strategy: dict[str, Any],
) -> None:
    ds = new_daemon_set("ds", strategy, **copy.deepcopy(template_spec))
    node = new_node("test-node", SIMPLE_DAEMON_SET_LABEL, **_node_options(node_spec))
    before = copy.deepcopy((ds, node))
    assert node_should_run_daemon_pod(node, ds) == expected
    assert (ds, node) == before


def _node_options(node_spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "taints": copy.deepcopy(node_spec.get("taints")),
        "unschedulable": node_spec.get("unschedulable", False),
    }


SLA_TAINT = [_taint("example.com/sla", "NoSchedule", "950")]
SLA_GT_TOLERATION = [
    {"key": "example.com/sla", "operator": "Gt", "value": "900", "effect": "NoSchedule"}
]


def test_comparison_operators_are_feature_gated() -> None:
    ds = new_daemon_set("ds", tolerations=SLA_GT_TOLERATION)
    node = new_node("test-node", taints=SLA_TAINT)
    assert node_should_run_daemon_pod(node, ds) == KEEP_ONLY
    assert node_should_run_daemon_pod(node, ds, comparison_operators=True) == RUN


def test_comparison_operators_reach_the_no_execute_check() -> None:
    ds = new_daemon_set(
        "ds",
        tolerations=[
            {"key": "example.com/sla", "operator": "Gt", "value": "900", "effect": "NoExecute"}
        ],
    )
    node = new_node("test-node", taints=[_taint("example.com/sla", "NoExecute", "950")])
    assert node_should_run_daemon_pod(node, ds) == NEVER
    assert node_should_run_daemon_pod(node, ds, comparison_operators=True) == RUN


@pytest.mark.parametrize(
    ("pod_spec", "taints", "expected"),
    [
        pytest.param({}, [], Predicates(True, True, True), id="all pass"),
        pytest.param({"nodeName": "elsewhere"}, [], Predicates(False, True, True), id="other node"),
        pytest.param(
            {"nodeSelector": {"zone": "b"}}, [], Predicates(True, False, True), id="selector"
        ),
        pytest.param({}, NO_SCHEDULE_TAINTS, Predicates(True, True, False), id="NoSchedule"),
        pytest.param({}, NO_EXECUTE_TAINTS, Predicates(True, True, False), id="NoExecute"),
        pytest.param(
            {}, [_taint("soft", "PreferNoSchedule")], Predicates(True, True, True), id="Prefer"
        ),
    ],
)
def test_predicates(
    pod_spec: dict[str, Any], taints: list[dict[str, Any]], expected: Predicates
) -> None:
    node = new_node("node-1", {"zone": "a"})
    pod = {"metadata": {"name": "p"}, "spec": pod_spec}
    assert predicates(pod, node, taints) == expected


def test_predicates_use_the_taints_given_not_the_nodes() -> None:
    node = new_node("node-1", taints=NO_EXECUTE_TAINTS)
    pod = new_pod(new_daemon_set("ds"), "node-1")
    assert predicates(pod, node, []).fits_taints
    assert not predicates(pod, node, NO_EXECUTE_TAINTS).fits_taints


def _upstream(node: dict[str, Any], ds: dict[str, Any]) -> Placement:
    """``NodeShouldRunDaemonPod`` as upstream computes it: the pod built for the node
    (``NewPod``), then ``predicates``."""
    template_node = ds["spec"]["template"]["spec"].get("nodeName")
    if template_node and template_node != node["metadata"]["name"]:
        return NEVER
    pod = new_pod(ds, node["metadata"]["name"])
    fits = predicates(pod, node, node["spec"].get("taints"))
    if not fits.fits_node_name or not fits.fits_node_affinity:
        return NEVER
    if not fits.fits_taints:
        evicting = [
            t
            for t in node["spec"].get("taints") or ()
            if t.get("effect") == "NoExecute" and predicates(pod, node, [t]).fits_taints is False
        ]
        return KEEP_ONLY if not evicting else NEVER
    return RUN


def test_one_placement_over_many_nodes_answers_as_a_pod_built_per_node() -> None:
    """DaemonPlacement reads the template once for every node; each node's answer must be
    the one of the pod upstream builds for that node, whatever nodes came before it."""
    for template_spec, _, _ in (case.values for case in CASES):
        ds = new_daemon_set("ds", **copy.deepcopy(template_spec))
        placements = DaemonPlacement(ds)
        nodes = [
            new_node(f"node-{i}", SIMPLE_DAEMON_SET_LABEL, **_node_options(node_spec))
            for i, (_, node_spec, _) in enumerate(case.values for case in CASES)
        ]
        for node in [*nodes, *reversed(nodes)]:
            assert placements.for_node(node) == _upstream(node, ds), (template_spec, node)
