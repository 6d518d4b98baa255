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

from ..scheduling import (
    NO_EXECUTE,
    RequiredNodeAffinity,
    do_not_schedule_taints_filter,
    find_matching_untolerated_taint,
)
from ._pods import new_pod

__all__ = ["Placement", "Predicates", "node_should_run_daemon_pod", "predicates"]


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


def node_should_run_daemon_pod(
    node: Mapping[str, Any], ds: Mapping[str, Any], *, comparison_operators: bool = False
) -> Placement:
    """Whether ``ds`` should run a pod on ``node``, and keep one that runs there already
    (upstream ``NodeShouldRunDaemonPod``; the table in this module's docstring)."""
    node_name = (node.get("metadata") or {}).get("name") or ""
    template_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    wanted_node = template_spec.get("nodeName") or ""
    if wanted_node and wanted_node != node_name:
        return Placement(should_run=False, should_continue_running=False)

    pod = new_pod(ds, node_name)
    taints = (node.get("spec") or {}).get("taints")
    fits = predicates(pod, node, taints, comparison_operators=comparison_operators)
    if not fits.fits_node_name or not fits.fits_node_affinity:
        return Placement(should_run=False, should_continue_running=False)
    if not fits.fits_taints:
        # A pod already there stays unless a NoExecute taint would evict it.
        untolerated = find_matching_untolerated_taint(
            taints,
            pod["spec"].get("tolerations"),
            _is_no_execute,
            comparison_operators=comparison_operators,
        )
        return Placement(should_run=False, should_continue_running=untolerated is None)
    return Placement(should_run=True, should_continue_running=True)
