"""The rolling update: which old daemon pods to delete and which nodes get a new pod now
(upstream ``update.go`` ``rollingUpdate``, Kubernetes 1.36). ``OnDelete`` has no step of its
own: the manage loop replaces a pod once someone deleted it.

:func:`plan_rolling_update` is pure; the sync sends what it returns through ``syncNodes``.
Two paths, by ``maxSurge`` (see :mod:`~kcontrol_controllers.daemonset._rolling` for the
limits):

Without surge - delete old pods, the manage loop creates the new ones:

- a node with two pods of a kind, with no live pod, or with both an old and a new one counts
  as unavailable (the manage loop sorts it out);
- a new pod that is not available counts as unavailable;
- an old pod that is not available is deleted at once (and counts as unavailable);
- old available pods are deleted while the unavailable count stays within
  ``maxUnavailable``.

With surge - create new pods beside the old ones, delete an old one once its node's new pod
is available:

- a node with two pods of a kind counts as surging;
- an old pod that is not available: on a node that should no longer run the DaemonSet it is
  deleted, else the node gets its new pod at once;
- an old available pod on a node that should still run it is a surge candidate, while fewer
  than ``maxSurge`` nodes surge; on a node that should not, it is deleted only while more pods
  are available than nodes should run them (so a move from one node to another never leaves
  the DaemonSet with fewer available pods);
- a node with both pods: the old one is deleted when the new one is available, else the node
  counts as surging.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import datetime
from typing import Any, NamedTuple

from kcontrol.client import Object

from ..podutil import is_pod_available
from ._placement import DaemonPlacement
from ._rolling import find_updated_pods_on_node, updated_desired_node_counts

__all__ = ["RollingPlan", "plan_rolling_update"]


class RollingPlan(NamedTuple):
    """What one rolling-update step does."""

    pods_to_delete: list[str]
    nodes_needing_pods: list[str]


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def plan_rolling_update(
    ds: Mapping[str, Any],
    nodes: Mapping[str, Mapping[str, Any]],
    node_to_daemon_pods: MutableMapping[str, list[Object]],
    hash_: str,
    now: datetime,
) -> RollingPlan:
    """One rolling-update step of ``ds`` (module docstring). ``nodes`` are the cluster's nodes
    by name; ``node_to_daemon_pods`` the DaemonSet's pods by node (entries for the nodes that
    should run a pod but have none are added); ``hash_`` the current revision's hash; ``now``
    the time availability is judged at.

    Raises :class:`~kcontrol_controllers.intstr.IntOrPercentError` for a malformed limit.
    """
    counts = updated_desired_node_counts(ds, nodes.values(), node_to_daemon_pods)
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)

    def available(pod: Mapping[str, Any]) -> bool:
        return is_pod_available(pod, min_ready, now)

    placements = DaemonPlacement(ds)

    def should_run(node_name: str) -> bool:
        node = nodes.get(node_name)
        return node is not None and placements.for_node(node).should_run

    if counts.max_surge == 0:
        return _without_surge(ds, node_to_daemon_pods, hash_, counts.max_unavailable, available)

    pods_to_delete: list[str] = []
    should_not_run_pods: list[str] = []
    candidate_nodes: list[str] = []
    allowed_nodes: list[str] = []
    num_surge = num_available = 0
    for node_name, pods in node_to_daemon_pods.items():
        new_pod, old_pod, ok = find_updated_pods_on_node(ds, pods, hash_)
        if not ok:
            num_surge += 1  # the manage loop prunes the extra pods first
            continue
        if old_pod is not None:
            num_available += available(old_pod)
        elif new_pod is not None:
            num_available += available(new_pod)

        if old_pod is None:
            continue  # the manage loop creates the node's pod if it needs one
        if new_pod is None:
            if not available(old_pod):
                if not should_run(node_name):
                    pods_to_delete.append(_name(old_pod))
                else:
                    allowed_nodes.append(node_name)
            elif not should_run(node_name):
                should_not_run_pods.append(_name(old_pod))
            elif num_surge < counts.max_surge:
                candidate_nodes.append(node_name)
            continue
        if not available(new_pod):
            num_surge += 1  # waiting for the new pod
            continue
        pods_to_delete.append(_name(old_pod))

    deletable = min(num_available - counts.desired_number_scheduled, len(should_not_run_pods))
    if deletable > 0:
        pods_to_delete.extend(should_not_run_pods[:deletable])
    remaining_surge = min(max(counts.max_surge - num_surge, 0), len(candidate_nodes))
    return RollingPlan(pods_to_delete, allowed_nodes + candidate_nodes[:remaining_surge])


def _without_surge(
    ds: Mapping[str, Any],
    node_to_daemon_pods: Mapping[str, list[Object]],
    hash_: str,
    max_unavailable: int,
    available: Any,
) -> RollingPlan:
    num_unavailable = 0
    replacements: list[str] = []
    candidates: list[str] = []
    for pods in node_to_daemon_pods.values():
        new_pod, old_pod, ok = find_updated_pods_on_node(ds, pods, hash_)
        if not ok or (old_pod is None) == (new_pod is None):
            num_unavailable += 1  # the manage loop creates or prunes
            continue
        if new_pod is not None:
            num_unavailable += not available(new_pod)
            continue
        assert old_pod is not None
        if not available(old_pod):
            replacements.append(_name(old_pod))
            num_unavailable += 1
        elif num_unavailable < max_unavailable:
            candidates.append(_name(old_pod))
    remaining = min(max(max_unavailable - num_unavailable, 0), len(candidates))
    return RollingPlan(replacements + candidates[:remaining], [])
