"""What the Job controller reads from its pods: failure, readiness and when a pod finished.
Ports of ``isPodFailed``, ``countReadyPods`` and ``getFinishedTime``. Which active pods go
first is :func:`kcontrol_controllers.activepods.sort_active_pods`.

Pods are plain dicts; nothing here mutates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kcontrol.metatime import ZERO_TIME, parse_time

from ..podutil import get_pod_ready_condition, is_pod_ready, is_pod_terminating
from ._spec import meta, only_replace_failed_pods

__all__ = [
    "count_ready_pods",
    "count_terminating_pods",
    "finished_time",
    "is_pod_failed",
    "is_pod_succeeded",
    "phase",
]


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
    condition = get_pod_ready_condition(pod)
    if condition is None or condition.get("status") != "False":
        return None
    return parse_time(condition.get("lastTransitionTime"))


def _finish_time_from_deletion(pod: Mapping[str, Any]) -> datetime | None:
    deleted = parse_time(meta(pod).get("deletionTimestamp"))
    if deleted is None:
        return None
    grace = int(meta(pod).get("deletionGracePeriodSeconds") or 0)
    return deleted - timedelta(seconds=grace)


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
    return created if created is not None else ZERO_TIME
