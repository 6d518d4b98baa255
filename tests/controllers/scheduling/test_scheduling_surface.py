"""The scheduling package's public surface."""

from __future__ import annotations

import kcontrol_controllers.scheduling as package

EXPECTED_SURFACE = {
    "EQUAL",
    "EXISTS",
    "GREATER_THAN",
    "LESS_THAN",
    "NODE_NAME_FIELD",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_NODE_DISK_PRESSURE",
    "TAINT_NODE_MEMORY_PRESSURE",
    "TAINT_NODE_NETWORK_UNAVAILABLE",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_OUT_OF_SERVICE",
    "TAINT_NODE_PID_PRESSURE",
    "TAINT_NODE_UNREACHABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "NodeSelector",
    "RequiredNodeAffinity",
    "TaintFilter",
    "add_or_update_toleration",
    "do_not_schedule_taints_filter",
    "find_matching_untolerated_taint",
    "match_node_selector_terms",
    "toleration_matches",
    "tolerates_taint",
    "tolerations_tolerate_taint",
}


def test_public_surface() -> None:
    assert set(package.__all__) == EXPECTED_SURFACE
    for name in package.__all__:
        assert hasattr(package, name)


def test_well_known_values() -> None:
    # The strings the API server and the kubelet use; a typo would silently match nothing.
    assert package.TAINT_NODE_NOT_READY == "node.kubernetes.io/not-ready"
    assert package.TAINT_NODE_UNREACHABLE == "node.kubernetes.io/unreachable"
    assert package.TAINT_NODE_UNSCHEDULABLE == "node.kubernetes.io/unschedulable"
    assert package.TAINT_NODE_MEMORY_PRESSURE == "node.kubernetes.io/memory-pressure"
    assert package.TAINT_NODE_DISK_PRESSURE == "node.kubernetes.io/disk-pressure"
    assert package.TAINT_NODE_PID_PRESSURE == "node.kubernetes.io/pid-pressure"
    assert package.TAINT_NODE_NETWORK_UNAVAILABLE == "node.kubernetes.io/network-unavailable"
    assert package.TAINT_NODE_OUT_OF_SERVICE == "node.kubernetes.io/out-of-service"
    assert (package.NO_SCHEDULE, package.PREFER_NO_SCHEDULE, package.NO_EXECUTE) == (
        "NoSchedule",
        "PreferNoSchedule",
        "NoExecute",
    )
    assert package.NODE_NAME_FIELD == "metadata.name"
