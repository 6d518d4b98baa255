"""What the Job controller reads from its pods: failure, readiness, when a pod finished, and
which active pods to delete first. Ports of ``isPodFailed``, ``countReadyPods``,
``getFinishedTime`` and ``controller.ActivePods``.

Pods are plain dicts; nothing here mutates them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from kcontrol.client import Object

from ..podutil import is_pod_ready, is_pod_terminating, parse_time, pod_ready_time
from ._spec import meta, only_replace_failed_pods

__all__ = [
    "count_ready_pods",
    "count_terminating_pods",
    "finished_time",
    "is_pod_failed",
    "is_pod_succeeded",
    "phase",
    "sort_active_pods",
]

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def phase(pod: Mapping[str, Any]) -> str:
    """``status.phase`` (``""`` when unset)."""
    return str((pod.get("status") or {}).get("phase") or "")


def is_pod_succeeded(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == "Succeeded"


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether the Job counts ``pod`` as failed: ``Failed``, or - unless replacements wait
    for the ``Failed`` phase (:func:`~._spec.only_replace_failed_pods`) - being deleted
    before it succeeded (an orphaned pod may never reach a terminal phase)."""
    if phase(pod) == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return meta(pod).get("deletionTimestamp") is not None and phase(pod) != "Succeeded"


def count_ready_pods(pods: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``pods`` are ready."""
    return sum(1 for pod in pods if is_pod_ready(pod))


def count_terminating_pods(pods: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``pods`` are being deleted without having reached a terminal phase."""
    return sum(1 for pod in pods if is_pod_terminating(pod))


def _max_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The highest restart count of the regular containers, and of the sidecars."""
    pod_status = pod.get("status") or {}
    regular = max(
        (int(c.get("restartCount") or 0) for c in pod_status.get("containerStatuses") or ()),
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
            for c in pod_status.get("initContainerStatuses") or ()
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _after_or_missing(t1: object, t2: object) -> bool:
    """Whether the time ``t1`` is after ``t2``, a missing time counting as after any other
    (upstream ``afterOrZero``)."""
    first, second = parse_time(t1), parse_time(t2)
    if first is None or second is None:
        return first is None
    return first > second


def _less(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether ``a`` is to be deleted before ``b`` (upstream ``ActivePods.Less``)."""
    node_a = str((a.get("spec") or {}).get("nodeName") or "")
    node_b = str((b.get("spec") or {}).get("nodeName") or "")
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    order_a, order_b = _PHASE_ORDER.get(phase(a), 0), _PHASE_ORDER.get(phase(b), 0)
    if order_a != order_b:
        return order_a < order_b
    ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
    if ready_a != ready_b:
        return not ready_a
    if ready_a and ready_b:
        since_a, since_b = pod_ready_time(a), pod_ready_time(b)
        if since_a != since_b:
            if since_a is None or since_b is None:
                return since_a is None
            return since_a > since_b
    restarts_a, restarts_b = _max_restarts(a), _max_restarts(b)
    if restarts_a[0] != restarts_b[0]:
        return restarts_a[0] > restarts_b[0]
    if restarts_a[1] != restarts_b[1]:
        return restarts_a[1] > restarts_b[1]
    created_a, created_b = meta(a).get("creationTimestamp"), meta(b).get("creationTimestamp")
    if parse_time(created_a) != parse_time(created_b):
        return _after_or_missing(created_a, created_b)
    return False


def _compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    if _less(a, b):
        return -1
    if _less(b, a):
        return 1
    return 0


def sort_active_pods(pods: Sequence[Object]) -> list[Object]:
    """``pods`` in the order they are deleted in (a new list; ties keep their order):
    unscheduled before scheduled; ``Pending`` before ``Unknown`` before ``Running``; not ready
    before ready; ready for a shorter time first; more container restarts first; newer first
    (a pod without a creation time first)."""
    return sorted(pods, key=functools.cmp_to_key(_compare))


# -- when a pod finished (upstream getFinishedTime) ----------------------------------------


def _latest_finish(
    previous: datetime | None,
    statuses: Sequence[Mapping[str, Any]],
    names: set[str] | None = None,
) -> tuple[bool, datetime | None]:
    """The latest ``finishedAt`` over the container ``statuses`` (those named ``names``, if
    given), starting from ``previous``; ``(False, None)`` as soon as one has not terminated
    (or has no finish time)."""
    latest = previous
    for container in statuses:
        if names is not None and container.get("name") not in names:
            continue
        terminated = (container.get("state") or {}).get("terminated")
        finished = parse_time((terminated or {}).get("finishedAt"))
        if finished is None:
            return False, None
        if latest is None or latest < finished:
            latest = finished
    return True, latest


def _finish_time_from_containers(pod: Mapping[str, Any]) -> datetime | None:
    pod_status = pod.get("status") or {}
    complete, latest = _latest_finish(None, pod_status.get("containerStatuses") or ())
    if not complete:
        return None
    # Sidecars (restartable init containers) always finish after the regular containers.
    sidecars = {
        str(c.get("name"))
        for c in (pod.get("spec") or {}).get("initContainers") or ()
        if c.get("restartPolicy") == "Always"
    }
    complete, latest = _latest_finish(
        latest, pod_status.get("initContainerStatuses") or (), sidecars
    )
    return latest if complete else None


def _finish_time_from_ready_false(pod: Mapping[str, Any]) -> datetime | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            if condition.get("status") == "False":
                return parse_time(condition.get("lastTransitionTime"))
            return None
    return None


def _finish_time_from_deletion(pod: Mapping[str, Any]) -> datetime | None:
    deleted = parse_time(meta(pod).get("deletionTimestamp"))
    if deleted is None:
        return None
    grace = int(meta(pod).get("deletionGracePeriodSeconds") or 0)
    return deleted - timedelta(seconds=grace)


_EPOCH: Final = datetime.fromisoformat("0001-01-01T00:00:00+00:00")


def finished_time(pod: Mapping[str, Any]) -> datetime:
    """When the pod finished, by the first of: the latest container finish time if every
    container terminated (sidecars included); the transition of its ``Ready`` condition to
    ``False``; its ``deletionTimestamp`` minus the grace period; its creation time (year 1
    when even that is missing, Go's zero time)."""
    for lookup in (
        _finish_time_from_containers,
        _finish_time_from_ready_false,
        _finish_time_from_deletion,
    ):
        found = lookup(pod)
        if found is not None:
            return found
    created = parse_time(meta(pod).get("creationTimestamp"))
    return created if created is not None else _EPOCH
