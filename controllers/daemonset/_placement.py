"""Which nodes a DaemonSet runs on: ``NodeShouldRunDaemonPod`` and its ``predicates``
(upstream ``pkg/controller/daemon/daemon_controller.go``, Kubernetes 1.36).

The DaemonSet controller does not ask the scheduler; it tests the pod it would make for a
node (:func:`~kcontrol_controllers.daemonset._pods.new_pod`, the daemon tolerations included)
against the node, three ways:

- node name: the template's ``spec.nodeName``, if set, must be this node;
- node affinity: the template's ``spec.nodeSelector`` and required node affinity must match
  the node (a selector that does not parse matches nothing; the error is dropped);
- taints: every ``NoSchedule`` and ``NoExecute`` taint of the node must be tolerated.

The outcome is a :class:`Placement`, first match wins:

==========================================  ==============  ==========================
the node ...                                ``should_run``  ``should_continue_running``
==========================================  ==============  ==========================
fails the node name or the node affinity    false           false
has an untolerated ``NoExecute`` taint      false           false
has only untolerated ``NoSchedule`` taints  false           true
passes all three                            true            true
==========================================  ==============  ==========================

So a ``NoSchedule`` taint keeps new daemon pods off a node but leaves a running one alone,
while a ``NoExecute`` taint has it deleted, as the taint manager would evict it. Resources,
host ports and pod (anti-)affinity are the scheduler's business: the pod is created and the
scheduler places it or leaves it pending.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kcontrol.client import deep_copy

from ..scheduling import (
    NO_EXECUTE,
    RequiredNodeAffinity,
    do_not_schedule_taints_filter,
    find_matching_untolerated_taint,
)
from ._pods import add_or_update_daemon_pod_tolerations

__all__ = [
    "DaemonPlacement",
    "Placement",
    "Predicates",
    "node_should_run_daemon_pod",
    "predicates",
]


class Predicates(NamedTuple):
    """The three tests :func:`predicates` applies, each passed or not."""

    fits_node_name: bool
    fits_node_affinity: bool
    fits_taints: bool


class Placement(NamedTuple):
    """Whether a DaemonSet should have a pod on a node (the table in this module's
    docstring)."""

    should_run: bool
    """A pod should be created on the node when it has none."""
    should_continue_running: bool
    """A pod already on the node should be kept (when false, it is deleted)."""


def _is_no_execute(taint: Mapping[str, Any]) -> bool:
    return taint.get("effect") == NO_EXECUTE


def predicates(
    pod: Mapping[str, Any],
    node: Mapping[str, Any],
    taints: Iterable[Mapping[str, Any]] | None,
    *,
    comparison_operators: bool = False,
) -> Predicates:
    """Test a daemon ``pod`` against ``node``, its ``taints`` given apart (upstream
    ``predicates``): the pod names no other node, its required node affinity matches, and its
    tolerations cover every ``NoSchedule`` and ``NoExecute`` taint.

    ``comparison_operators`` enables the ``Gt`` / ``Lt`` toleration operators (the
    ``TaintTolerationComparisonOperators`` feature gate).
    """
    pod_node = (pod.get("spec") or {}).get("nodeName") or ""
    node_name = (node.get("metadata") or {}).get("name") or ""
    untolerated = find_matching_untolerated_taint(
        taints,
        (pod.get("spec") or {}).get("tolerations"),
        do_not_schedule_taints_filter,
        comparison_operators=comparison_operators,
    )
    return Predicates(
        fits_node_name=not pod_node or pod_node == node_name,
        fits_node_affinity=RequiredNodeAffinity(pod).match(node),
        fits_taints=untolerated is None,
    )


class DaemonPlacement:
    """:func:`node_should_run_daemon_pod` for one DaemonSet and any number of nodes: what the
    pod it would make for a node (upstream ``NewPod``) is tested on - the template's node
    name, its required node affinity, and its tolerations with the daemon tolerations added -
    is taken from the DaemonSet once, not copied and parsed again for every node (a sync walks
    every node three times: placing pods, counting for a rolling update, the status).
    Built from the DaemonSet as it is now: build another after it changes."""

    __slots__ = ("_affinity", "_comparison_operators", "_tolerations", "_wanted_node")

    def __init__(self, ds: Mapping[str, Any], *, comparison_operators: bool = False) -> None:
        template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        self._wanted_node = str(template_spec.get("nodeName") or "")
        self._affinity = RequiredNodeAffinity({"spec": template_spec})
        spec: dict[str, Any] = {
            "tolerations": deep_copy(list(template_spec.get("tolerations") or ())),
            "hostNetwork": template_spec.get("hostNetwork"),
        }
        add_or_update_daemon_pod_tolerations(spec)
        self._tolerations: list[Mapping[str, Any]] = spec["tolerations"]
        self._comparison_operators = comparison_operators

    def for_node(self, node: Mapping[str, Any]) -> Placement:
        """Whether the DaemonSet should run a pod on ``node``, and keep one that runs there
        already (the table in this module's docstring)."""
        node_name = (node.get("metadata") or {}).get("name") or ""
        # The pod would name this node (NewPod sets spec.nodeName), so only a template
        # naming another one fails the node name.
        if self._wanted_node and self._wanted_node != node_name:
            return _NOT_HERE
        if not self._affinity.match(node):
            return _NOT_HERE
        taints = (node.get("spec") or {}).get("taints")
        if not taints:
            return _RUN
        comparison = self._comparison_operators
        if (
            find_matching_untolerated_taint(
                taints,
                self._tolerations,
                do_not_schedule_taints_filter,
                comparison_operators=comparison,
            )
            is None
        ):
            return _RUN
        # A pod already there stays unless a NoExecute taint would evict it.
        untolerated = find_matching_untolerated_taint(
            taints, self._tolerations, _is_no_execute, comparison_operators=comparison
        )
        return Placement(should_run=False, should_continue_running=untolerated is None)


_NOT_HERE = Placement(should_run=False, should_continue_running=False)
_RUN = Placement(should_run=True, should_continue_running=True)


def node_should_run_daemon_pod(
    node: Mapping[str, Any], ds: Mapping[str, Any], *, comparison_operators: bool = False
) -> Placement:
    """Whether ``ds`` should run a pod on ``node``, and keep one that runs there already
    (upstream ``NodeShouldRunDaemonPod``; the table in this module's docstring). For many
    nodes, build one :class:`DaemonPlacement`."""
    return DaemonPlacement(ds, comparison_operators=comparison_operators).for_node(node)
