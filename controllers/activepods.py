"""Which active pods a controller deletes first: a pure ordering, shared by the workload
controllers.

Ports of ``ActivePods`` and ``ActivePodsWithRanks`` (``pkg/controller/controller_utils.go``) as
Kubernetes 1.36 runs them: with ``PodDeletionCost`` (beta, on) and ``LogarithmicScaleDown`` (GA,
locked on). Pods that sort first are deleted first; for two pods the first rule that tells them
apart decides:

1. a pod not yet scheduled before a scheduled one;
2. ``Pending`` before ``Unknown`` before ``Running`` (other phases count as ``Pending``);
3. a pod that is not ready before a ready one;
4. the lower ``controller.kubernetes.io/pod-deletion-cost`` first (missing or malformed: 0);
5. the higher rank first - the caller's co-location rank of the pod (the ReplicaSet controller
   counts the active pods of the same owner on its node, so doubled-up nodes are thinned first);
6. of two ready pods, the one ready for a shorter time first;
7. the pod whose containers restarted more first (regular containers, then sidecars);
8. the newer pod first.

:func:`sort_active_pods` is ``ActivePods`` (the Job controller's order): rules 1-3 and 6-8, times
compared exactly. :func:`sort_active_pods_with_ranks` is ``ActivePodsWithRanks`` (the
ReplicaSet controller's): every rule, and given ``now``, rules 6 and 8 compare times on a
logarithmic scale relative to it: durations whose base-2 logarithms (in nanoseconds) have the
same integer part count as equal, and the pod with the smaller UID goes first, which spreads
deletions pseudo-randomly among pods of similar age. A missing time sorts first. When no rule
decides, the order is kept.

Pods are plain dicts; nothing here mutates them.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kcontrol.client import Object
from kcontrol.metatime import parse_time

from .podutil import is_pod_ready, pod_ready_time

__all__ = [
    "POD_DELETION_COST_ANNOTATION",
    "RankedPod",
    "compare_for_deletion",
    "max_container_restarts",
    "pod_deletion_cost",
    "sort_active_pods",
    "sort_active_pods_with_ranks",
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
    """Whether ``t1`` is after ``t2``, a missing time counting as after any other (upstream
    ``afterOrZero``)."""
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


def _less(a: RankedPod, b: RankedPod, now: datetime | None, *, with_ranks: bool) -> bool:
    """Whether ``a`` is to be deleted before ``b``: upstream ``ActivePodsWithRanks.Less``, or
    without ``with_ranks`` ``ActivePods.Less`` (no rules 4 and 5)."""
    pa, pb = a.pod, b.pod
    node_a, node_b = _node(pa), _node(pb)
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    if _phase_order(pa) != _phase_order(pb):
        return _phase_order(pa) < _phase_order(pb)
    ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
    if ready_a != ready_b:
        return not ready_a
    if with_ranks:
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


def _compare(a: RankedPod, b: RankedPod, now: datetime | None, *, with_ranks: bool) -> int:
    if _less(a, b, now, with_ranks=with_ranks):
        return -1
    if _less(b, a, now, with_ranks=with_ranks):
        return 1
    return 0


def compare_for_deletion(a: RankedPod, b: RankedPod, now: datetime | None) -> int:
    """``ActivePodsWithRanks`` as a ``cmp``-style comparison for
    :func:`functools.cmp_to_key`: negative when ``a`` is to be deleted before ``b``, positive
    when after, 0 when no rule decides. ``now`` is the reference of the logarithmic time
    comparison (``None`` compares times exactly)."""
    return _compare(a, b, now, with_ranks=True)


def sort_active_pods(pods: Sequence[Object]) -> list[Object]:
    """``pods`` in ``ActivePods`` order (a new list; ties keep their order): every rule of the
    module docstring but the deletion cost and the rank, times compared exactly."""
    ranked = [RankedPod(pod, 0) for pod in pods]
    ranked.sort(key=functools.cmp_to_key(lambda a, b: _compare(a, b, None, with_ranks=False)))
    return [entry.pod for entry in ranked]


def sort_active_pods_with_ranks(
    pods: Sequence[Object], ranks: Sequence[int], now: datetime | None
) -> list[Object]:
    """``pods`` in ``ActivePodsWithRanks`` order (:func:`compare_for_deletion`), ``ranks[i]``
    being the rank of ``pods[i]`` (a new list; ties keep their order)."""
    ranked = [RankedPod(pod, rank) for pod, rank in zip(pods, ranks, strict=True)]
    ranked.sort(key=functools.cmp_to_key(lambda a, b: compare_for_deletion(a, b, now)))
    return [entry.pod for entry in ranked]
