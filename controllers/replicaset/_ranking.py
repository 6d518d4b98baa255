"""Which pods a ReplicaSet deletes first when it scales down: a pure ranking.

A port of the ReplicaSet controller's ``getPodsToDelete`` and
``getPodsRankedByRelatedPodsOnSameNode`` (``replica_set.go``), as Kubernetes 1.36 runs them.
The order is upstream's ``ActivePodsWithRanks``
(:func:`kcontrol_controllers.activepods.sort_active_pods_with_ranks`, whose docstring lists
the rules), the rank of a pod being how many active pods of the same owner (this ReplicaSet and
its siblings under the same controller) run on its node, so doubled-up nodes are thinned first;
times are compared on a logarithmic scale relative to ``now``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kcontrol.client import Object
from kcontrol.metatime import parse_time

from ..activepods import sort_active_pods_with_ranks
from ..podutil import is_pod_active, is_pod_ready

__all__ = [
    "deletion_age_ratios",
    "pods_to_delete",
    "ranks_by_related_pods_on_same_node",
    "sort_for_deletion",
]


def _node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _created(pod: Mapping[str, Any]) -> datetime | None:
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def ranks_by_related_pods_on_same_node(
    pods: Sequence[Mapping[str, Any]], related_pods: Sequence[Mapping[str, Any]]
) -> list[int]:
    """For each of ``pods``, how many active ``related_pods`` are on its node (unscheduled
    pods share the node ``""``). ``related_pods`` should include ``pods``."""
    on_node: dict[str, int] = {}
    for pod in related_pods:
        if is_pod_active(pod):
            node = _node(pod)
            on_node[node] = on_node.get(node, 0) + 1
    return [on_node.get(_node(pod), 0) for pod in pods]


def sort_for_deletion(
    active_pods: Sequence[Object], related_pods: Sequence[Object], now: datetime | None
) -> list[Object]:
    """``active_pods`` in deletion order (see the module docstring), ranked by
    :func:`ranks_by_related_pods_on_same_node`. Returns a new list; nothing is modified."""
    ranks = ranks_by_related_pods_on_same_node(active_pods, related_pods)
    return sort_active_pods_with_ranks(active_pods, ranks, now)


def pods_to_delete(
    active_pods: Sequence[Object],
    related_pods: Sequence[Object],
    count: int,
    now: datetime,
    observe_age_ratio: Callable[[float], object] | None = None,
) -> list[Object]:
    """The ``count`` pods of ``active_pods`` to delete first (``count <= len(active_pods)``).

    The pods are only sorted (:func:`sort_for_deletion`) when some of them are kept; then
    ``observe_age_ratio`` receives each of :func:`deletion_age_ratios`. Returns a new list.
    """
    if count >= len(active_pods):
        return list(active_pods)
    ordered = sort_for_deletion(active_pods, related_pods, now)
    if observe_age_ratio is not None:
        for ratio in deletion_age_ratios(ordered, count, now):
            observe_age_ratio(ratio)
    return ordered[:count]


def _milliseconds(later: datetime, earlier: datetime) -> int:
    """``later - earlier`` in whole milliseconds, truncated towards zero (Go's
    ``Duration.Milliseconds``)."""
    delta = later - earlier
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000 if micros >= 0 else -(-micros // 1000)


def deletion_age_ratios(
    sorted_pods: Sequence[Mapping[str, Any]], count: int, now: datetime
) -> list[float]:
    """For each ready pod among the first ``count`` of ``sorted_pods``, its age divided by
    the age of the youngest ready pod of ``sorted_pods`` (whole milliseconds, integer
    division, as upstream computes ``replicaset_controller_sorting_deletion_age_ratio``).
    Pods without a creation time, and ages of zero, are left out."""
    youngest: datetime | None = None
    for pod in sorted_pods:
        created = _created(pod)
        if created is not None and is_pod_ready(pod) and (youngest is None or created > youngest):
            youngest = created
    if youngest is None:
        return []
    youngest_age = _milliseconds(now, youngest)
    if youngest_age == 0:
        return []
    ratios: list[float] = []
    for pod in sorted_pods[:count]:
        created = _created(pod)
        if created is None or not is_pod_ready(pod):
            continue
        age = _milliseconds(now, created)
        quotient = abs(age) // abs(youngest_age)  # Go's integer division truncates
        ratios.append(float(quotient if (age >= 0) == (youngest_age > 0) else -quotient))
    return ratios
