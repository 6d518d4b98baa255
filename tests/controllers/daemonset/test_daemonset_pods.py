"""Daemon pods (upstream daemonset_util_test.go: TestIsPodUpdated, TestCreatePodTemplate,
TestReplaceDaemonSetPodNodeNameNodeAffinity, TestGetTargetNodeName; and the pure helpers of
daemon_controller.go: NewPod, podByCreationTimestampAndPhase, failedPodsBackoffKey,
getUnscheduledPodsWithoutNode)."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from daemonset_fixtures import NOW, daemon_pod, mark_pod_ready, new_daemon_set, new_node

from kcontrol_controllers.daemonset._pods import (
    DAEMON_POD_TOLERATIONS,
    add_or_update_daemon_pod_tolerations,
    create_pod_template,
    creation_order_key,
    failed_pods_backoff_key,
    get_target_node_name,
    get_template_generation,
    get_unscheduled_pods_without_node,
    is_pod_updated,
    new_pod,
    replace_daemon_set_pod_node_name_node_affinity,
    split_by_available_pods,
)

GENERATION = 12345
BAD_GENERATION = 12350
HASH = "55555"
LABELS = {"pod-template-generation": str(GENERATION), "controller-revision-hash": HASH}
LABELS_NO_HASH = {"pod-template-generation": str(GENERATION)}

EXPECTED_KEYS = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
]
NETWORK_UNAVAILABLE = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def _keys(tolerations: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in tolerations]


@pytest.mark.parametrize(
    ("generation", "labels", "hash_", "updated"),
    [
        pytest.param(GENERATION, LABELS, HASH, True, id="generation and hash both match"),
        pytest.param(GENERATION, LABELS, HASH + "123", True, id="generation matches, hash not"),
        pytest.param(GENERATION, LABELS_NO_HASH, HASH, True, id="generation, no hash label"),
        pytest.param(GENERATION, LABELS_NO_HASH, "", True, id="generation, no hash at all"),
        pytest.param(GENERATION, LABELS, "", True, id="generation, hash label, no hash"),
        pytest.param(BAD_GENERATION, LABELS, HASH, True, id="generation differs, hash matches"),
        pytest.param(BAD_GENERATION, LABELS, HASH + "123", False, id="neither matches"),
        pytest.param(GENERATION, {}, "", False, id="empty labels, no hash"),
        pytest.param(GENERATION, {}, HASH, False, id="empty labels"),
        pytest.param(GENERATION, None, HASH, False, id="no labels"),
        pytest.param(None, LABELS_NO_HASH, "", False, id="no generation, no hash"),
        pytest.param(None, {"controller-revision-hash": ""}, "", False, id="empty hash label"),
    ],
)
def test_is_pod_updated(
    generation: int | None, labels: dict[str, str] | None, hash_: str, updated: bool
) -> None:
    pod = daemon_pod("pod1", "node1", labels)
    assert is_pod_updated(pod, hash_, generation) is updated


@pytest.mark.parametrize(
    ("generation", "hash_", "expect_hash_label"),
    [pytest.param(1, "", False, id="no hash"), pytest.param(2, "3242341807", True, id="hash")],
)
def test_create_pod_template(generation: int, hash_: str, expect_hash_label: bool) -> None:
    template = create_pod_template({}, generation, hash_)
    labels = template["metadata"]["labels"]
    assert labels["pod-template-generation"] == str(generation)
    if expect_hash_label:
        assert labels["controller-revision-hash"] == hash_
    else:
        assert "controller-revision-hash" not in labels
    assert _keys(template["spec"]["tolerations"]) == EXPECTED_KEYS


def test_create_pod_template_copies_the_template() -> None:
    ds = new_daemon_set("ds", tolerations=[{"key": "mine", "operator": "Exists"}])
    template = ds["spec"]["template"]
    before = copy.deepcopy(template)
    created = create_pod_template(template, None, "abc")
    assert template == before
    assert "pod-template-generation" not in created["metadata"]["labels"]
    assert created["metadata"]["labels"]["name"] == "simple-daemon"
    assert created["spec"]["containers"] == template["spec"]["containers"]
    assert created["spec"]["containers"] is not template["spec"]["containers"]
    assert _keys(created["spec"]["tolerations"][1:]) == EXPECTED_KEYS
    assert created["spec"]["tolerations"][0] == {"key": "mine", "operator": "Exists"}


def test_daemon_tolerations_are_forever_and_in_order() -> None:
    spec: dict[str, Any] = {}
    add_or_update_daemon_pod_tolerations(spec)
    assert _keys(spec["tolerations"]) == EXPECTED_KEYS
    assert all(t["operator"] == "Exists" for t in spec["tolerations"])
    assert all("tolerationSeconds" not in t for t in spec["tolerations"])
    assert list(DAEMON_POD_TOLERATIONS) == spec["tolerations"]


def test_host_network_pods_also_tolerate_network_unavailable() -> None:
    spec: dict[str, Any] = {"hostNetwork": True}
    add_or_update_daemon_pod_tolerations(spec)
    assert _keys(spec["tolerations"]) == [*EXPECTED_KEYS, NETWORK_UNAVAILABLE]
    spec = {"hostNetwork": False}
    add_or_update_daemon_pod_tolerations(spec)
    assert NETWORK_UNAVAILABLE not in _keys(spec["tolerations"])


def test_daemon_tolerations_replace_a_limited_one_and_keep_the_others() -> None:
    limited = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    other = {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
    spec: dict[str, Any] = {"tolerations": [limited, other]}
    add_or_update_daemon_pod_tolerations(spec)
    assert spec["tolerations"][0] == {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    assert spec["tolerations"][1] == other
    assert len(spec["tolerations"]) == 1 + len(EXPECTED_KEYS)
    add_or_update_daemon_pod_tolerations(spec)  # idempotent
    assert len(spec["tolerations"]) == 1 + len(EXPECTED_KEYS)


def test_new_pod() -> None:
    ds = new_daemon_set("ds", nodeSelector={"a": "b"})
    before = copy.deepcopy(ds)
    pod = new_pod(ds, "node-1")
    assert ds == before
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["labels"] == ds["spec"]["template"]["metadata"]["labels"]
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["spec"]["nodeSelector"] == {"a": "b"}
    assert _keys(pod["spec"]["tolerations"]) == EXPECTED_KEYS


# -- pinning to a node -------------------------------------------------------------------------


def _fields(*values: str, operator: str = "In", key: str = "metadata.name") -> dict[str, Any]:
    return {"matchFields": [{"key": key, "operator": operator, "values": list(values)}]}


def _expressions(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


PREFERRED = [
    {"weight": 1, "preference": _expressions("kubernetes.io/hostname", "host_1")},
]


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        pytest.param(None, _required(_fields("host_1")), id="nil affinity"),
        pytest.param(
            _required(_expressions("kubernetes.io/hostname", "host_1")),
            _required(_fields("host_1")),
            id="expressions replaced",
        ),
        pytest.param(
            {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": PREFERRED}},
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": PREFERRED,
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [_fields("host_1")]
                    },
                }
            },
            id="preferred terms kept",
        ),
        pytest.param(
            _required(_fields("host_1", "host_2")),
            _required(_fields("host_1")),
            id="several node names narrowed to one",
        ),
        pytest.param(
            _required(_expressions("hostname", "host_1"), _fields("host_2")),
            _required(_fields("host_1")),
            id="every term replaced",
        ),
        pytest.param(
            _required(_fields("host_2", operator="NotIn")),
            _required(_fields("host_1")),
            id="NotIn replaced",
        ),
        pytest.param(
            _required(_fields("bar", key="metadata.foo")),
            _required(_fields("host_1")),
            id="unknown field key replaced",
        ),
        pytest.param(
            {"podAntiAffinity": {"x": 1}},
            {"podAntiAffinity": {"x": 1}, **_required(_fields("host_1"))},
            id="pod anti-affinity kept",
        ),
    ],
)
def test_replace_node_name_node_affinity(
    affinity: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    given = copy.deepcopy(affinity)
    got = replace_daemon_set_pod_node_name_node_affinity(given, "host_1")
    assert got == expected
    if given is not None:
        assert got is given  # the caller's affinity, written in place


def _pod_with(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "pod", "namespace": "default"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "node_name"),
    [
        pytest.param({"nodeName": "node-1"}, "node-1", id="bound"),
        pytest.param({"affinity": _required(_fields("node-1"))}, "node-1", id="pinned"),
        pytest.param(
            {"nodeName": "node-2", "affinity": _required(_fields("node-1"))},
            "node-2",
            id="nodeName wins",
        ),
        pytest.param(
            {"affinity": _required(_expressions("a", "b"), _fields("node-3"))},
            "node-3",
            id="the field term after an expression term",
        ),
        pytest.param(
            {"affinity": _required(_fields("node-1", operator="NotIn"), _fields("node-4"))},
            "node-4",
            id="NotIn terms are skipped",
        ),
    ],
)
def test_get_target_node_name(spec: dict[str, Any], node_name: str) -> None:
    assert get_target_node_name(_pod_with(spec)) == node_name


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"affinity": _required(_fields("node-1", "node-2"))},
            "not unique for pod default/pod",
            id="two node names",
        ),
        pytest.param({}, "no spec.affinity.nodeAffinity", id="no affinity"),
        pytest.param(
            {"affinity": {"nodeAffinity": {}}}, "requiredDuringScheduling", id="no required"
        ),
        pytest.param({"affinity": _required()}, "no nodeSelectorTerms", id="no terms"),
        pytest.param(
            {"affinity": _required(_expressions("a", "b"))}, "no node name found", id="no field"
        ),
    ],
)
def test_get_target_node_name_errors(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_target_node_name(_pod_with(spec))


# -- generations, availability, order, bookkeeping ---------------------------------------------


def _with_annotation(value: str | None) -> dict[str, Any]:
    ds = new_daemon_set("ds")
    if value is not None:
        ds["metadata"]["annotations"] = {"deprecated.daemonset.template.generation": value}
    return ds


@pytest.mark.parametrize(
    ("annotation", "generation"),
    [(None, None), ("7", 7), ("0", 0), ("-3", -3), ("9223372036854775807", 2**63 - 1)],
)
def test_get_template_generation(annotation: str | None, generation: int | None) -> None:
    assert get_template_generation(_with_annotation(annotation)) == generation


@pytest.mark.parametrize("annotation", ["", "abc", "1.5", "9223372036854775808"])
def test_get_template_generation_errors(annotation: str) -> None:
    with pytest.raises(ValueError):
        get_template_generation(_with_annotation(annotation))


def test_split_by_available_pods() -> None:
    long_ready = mark_pod_ready(daemon_pod("long", "n1"), NOW - timedelta(seconds=30))
    just_ready = mark_pod_ready(daemon_pod("just", "n2"), NOW - timedelta(seconds=5))
    not_ready = daemon_pod("not-ready", "n3")
    pods = [just_ready, not_ready, long_ready]
    available, unavailable = split_by_available_pods(10, pods, NOW)
    assert [p["metadata"]["name"] for p in available] == ["long"]
    assert [p["metadata"]["name"] for p in unavailable] == ["just", "not-ready"]
    available, unavailable = split_by_available_pods(0, pods, NOW)
    assert [p["metadata"]["name"] for p in available] == ["just", "long"]
    assert [p["metadata"]["name"] for p in unavailable] == ["not-ready"]


def test_creation_order() -> None:
    older, newer = NOW - timedelta(minutes=5), NOW
    pods = [
        daemon_pod("pending-old", "", created=older),
        daemon_pod("b-new", "n1", created=newer),
        daemon_pod("b-old", "n1", created=older),
        daemon_pod("a-old", "n1", created=older),
        daemon_pod("no-timestamp", "n1"),
    ]
    ordered = sorted(pods, key=creation_order_key)
    # bound first, oldest first (a missing timestamp is the zero time), then by name
    assert [p["metadata"]["name"] for p in ordered] == [
        "no-timestamp",
        "a-old",
        "b-old",
        "b-new",
        "pending-old",
    ]


def test_failed_pods_backoff_key() -> None:
    ds = new_daemon_set("ds")
    assert failed_pods_backoff_key(ds, "node-1") == "uid-ds/0/node-1"
    ds["status"] = {"observedGeneration": 4}
    assert failed_pods_backoff_key(ds, "node-1") == "uid-ds/4/node-1"


def test_get_unscheduled_pods_without_node() -> None:
    nodes = [new_node("node-0"), new_node("node-1")]
    node_to_pods = {
        "node-0": [daemon_pod("on-existing", "")],
        "node-2": [daemon_pod("pending-gone", ""), daemon_pod("bound-gone", "node-2")],
        "node-3": [daemon_pod("pending-gone-2", "")],
    }
    assert get_unscheduled_pods_without_node(nodes, node_to_pods) == [
        "pending-gone",
        "pending-gone-2",
    ]
    assert get_unscheduled_pods_without_node([], {}) == []
