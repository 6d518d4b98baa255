"""Scheduling predicates kube-controller-manager's controllers evaluate themselves, without the
scheduler: pure functions over node and pod dicts, as component-helpers
``scheduling/corev1`` gives them to upstream's controllers (Kubernetes 1.36).

- ``_nodeaffinity``: node selectors and a pod's required node affinity - which nodes a pod may
  be placed on by their labels (``matchExpressions``, ``spec.nodeSelector``) and their name
  (``matchFields`` on ``metadata.name``);
- ``_taints``: taints and tolerations - whether a pod's tolerations cover a node's taints (a
  chosen subset of them, such as the ``NoExecute`` ones), the well-known taint keys, and how a
  toleration is added to a pod spec.

The DaemonSet controller is the first user; anything else that has to answer "may this pod
run on that node?" the way the scheduler's filters would uses the same functions.
"""

from ._nodeaffinity import (
    NODE_NAME_FIELD,
    NodeSelector,
    RequiredNodeAffinity,
    match_node_selector_terms,
)
from ._taints import (
    EQUAL,
    EXISTS,
    GREATER_THAN,
    LESS_THAN,
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_OUT_OF_SERVICE,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
    TaintFilter,
    add_or_update_toleration,
    do_not_schedule_taints_filter,
    find_matching_untolerated_taint,
    tolerates_taint,
    toleration_matches,
    tolerations_tolerate_taint,
)

__all__ = [
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
    "tolerates_taint",
    "toleration_matches",
    "tolerations_tolerate_taint",
]
