"""Which pods a ReplicaSet deletes first when it scales down: a pure ranking.

A port of ``ActivePodsWithRanks`` (``pkg/controller/controller_utils.go``) and of the
ReplicaSet controller's ``getPodsToDelete``, as Kubernetes 1.36 runs them: with
``PodDeletionCost`` (beta, on) and ``LogarithmicScaleDown`` (GA, locked on). Pods that sort
first are deleted first; for two pods the first rule that tells them apart decides:

1. a pod not yet scheduled before a scheduled one;
2. ``Pending`` before ``Unknown`` before ``Running`` (other phases count as ``Pending``);
3. a pod that is not ready before a ready one;
4. the lower ``controller.kubernetes.io/pod-deletion-cost`` first (missing or malformed: 0);
5. the higher rank first - the rank of a pod is how many active pods of the same owner (this
   ReplicaSet and its siblings under the same controller) run on its node, so doubled-up
   nodes are thinned first;
6. of two ready pods, the one ready for a shorter time first;
7. the pod whose containers restarted more first (regular containers, then sidecars);
8. the newer pod first.

Rules 6 and 8 compare times on a logarithmic scale relative to ``now``: durations whose
base-2 logarithms (in nanoseconds) have the same integer part count as equal, and the pod with
the smaller UID goes first, which spreads deletions pseudo-randomly among pods of similar
age. A missing time sorts first. When no rule decides, the order is kept.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kcontrol.client import Object

from ..podutil import is_pod_active, is_pod_ready, parse_time, pod_ready_time

__all__ = [
    "POD_DELETION_COST_ANNOTATION",
    "RankedPod",
    "compare_for_deletion",
    "deletion_age_ratios",
    "max_container_restarts",
    "pod_deletion_cost",
    "pods_to_delete",
    "ranks_by_related_pods_on_same_node",
    "sort_for_deletion",
]

POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32 = (-(2**31), 2**31 - 1)
# Go's strconv.ParseInt(s, 10, 32) after upstream's first-digit check: an optional minus,
# then digits; "+1", "007" and "" are rejected ("-007" is accepted, as upstream).
_DELETION_COST = re.compile(r"(?:0|-[0-9]+|[1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class RankedPod:
    """A pod with its co-location rank (rule 5 of the module docstring)."""

    pod: Object
    rank: int


def pod_deletion_cost(pod: Mapping[str, Any]) -> int:
    """The pod's ``controller.kubernetes.io/pod-deletion-cost`` as an int32; 0 when the
    annotation is missing, is not a canonical integer (``"+1"``, ``"08"``, ``"1.5"``) or is
    out of the int32 range, however long (upstream defaults to 0 on any parse error)."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST_ANNOTATION)
    if not isinstance(value, str) or not _DELETION_COST.fullmatch(value):
        return 0
    # Measured before converting: Python refuses strings of more than 4,300 digits.
    digits = value.removeprefix("-").lstrip("0") or "0"
    if len(digits) > len(str(_INT32[1])):
        return 0
    cost = -int(digits) if value.startswith("-") else int(digits)
    return cost if _INT32[0] <= cost <= _INT32[1] else 0


def max_container_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The highest restart count of the pod's regular containers, and of its sidecars (init
    containers with ``restartPolicy: Always``)."""
    status = pod.get("status") or {}
    regular = max(
        (int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()),
        default=0,
    )
    sidecars = {
        c.get("name")
        for c in (pod.get("spec") or {}).get("initContainers") or ()
        if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or ()
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _node(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _phase_order(pod: Mapping[str, Any]) -> int:
    return _PHASE_ORDER.get((pod.get("status") or {}).get("phase") or "", 0)


def _uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _created(pod: Mapping[str, Any]) -> datetime | None:
    return parse_time((pod.get("metadata") or {}).get("creationTimestamp"))


def _after_or_missing(t1: datetime | None, t2: datetime | None) -> bool:
    """Whether ``t1`` is after ``t2``, a missing time counting as after any other."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank(moment: datetime, now: datetime) -> int:
    """The integer part of log2 of ``now - moment`` in nanoseconds; -1 if not positive."""
    delta = now - moment
    nanoseconds = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return int(math.log2(float(nanoseconds))) if nanoseconds > 0 else -1


def _newer_first(
    a: RankedPod, b: RankedPod, ta: datetime | None, tb: datetime | None, now: datetime | None
) -> bool:
    """Rules 6 and 8 for two different times: whether ``a`` sorts before ``b``."""
    if now is None or ta is None or tb is None:
        return _after_or_missing(ta, tb)
    rank_diff = _log_rank(ta, now) - _log_rank(tb, now)
    if rank_diff == 0:
        return _uid(a.pod) < _uid(b.pod)
    return rank_diff < 0


def _less(a: RankedPod, b: RankedPod, now: datetime | None) -> bool:
    """Whether ``a`` is to be deleted before ``b`` (upstream ``ActivePodsWithRanks.Less``)."""
    pa, pb = a.pod, b.pod
    node_a, node_b = _node(pa), _node(pb)
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    if _phase_order(pa) != _phase_order(pb):
        return _phase_order(pa) < _phase_order(pb)
    ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
    if ready_a != ready_b:
        return not ready_a
    cost_a, cost_b = pod_deletion_cost(pa), pod_deletion_cost(pb)
    if cost_a != cost_b:
        return cost_a < cost_b
    if a.rank != b.rank:
        return a.rank > b.rank
    if ready_a and ready_b:
        ready_since_a, ready_since_b = pod_ready_time(pa), pod_ready_time(pb)
        if ready_since_a != ready_since_b:
            return _newer_first(a, b, ready_since_a, ready_since_b, now)
    restarts_a, restarts_b = max_container_restarts(pa), max_container_restarts(pb)
    if restarts_a[0] != restarts_b[0]:
        return restarts_a[0] > restarts_b[0]
    if restarts_a[1] != restarts_b[1]:
        return restarts_a[1] > restarts_b[1]
    created_a, created_b = _created(pa), _created(pb)
    if created_a != created_b:
        return _newer_first(a, b, created_a, created_b, now)
    return False


def compare_for_deletion(a: RankedPod, b: RankedPod, now: datetime | None) -> int:
    """A ``cmp``-style comparison for :func:`functools.cmp_to_key`: negative when ``a`` is
    to be deleted before ``b``, positive when after, 0 when no rule decides. ``now`` is the
    reference of the logarithmic time comparison (``None`` compares times exactly)."""
    if _less(a, b, now):
        return -1
    if _less(b, a, now):
        return 1
    return 0


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
    ranked = [RankedPod(pod, rank) for pod, rank in zip(active_pods, ranks, strict=True)]
    ranked.sort(key=functools.cmp_to_key(lambda a, b: compare_for_deletion(a, b, now)))
    return [entry.pod for entry in ranked]


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
