"""ReplicaSet status: the pure calculation, its conditions, and the guarded write.

A port of ``replica_set_utils.go``. :func:`calculate_status` derives the counts from the
claimed pods; :func:`update_replicaset_status` writes ``replicasets/status`` only when a count,
a condition or the observed generation changed, retrying once on a fresh copy if the write
fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kcontrol.client import REPLICASETS, Client, Object, Resource, deep_copy
from kcontrol.labels import selector_from_set
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time

from ..conditions import get_condition, remove_condition, set_condition
from ..podutil import is_pod_available, is_pod_ready

__all__ = [
    "FAILED_CREATE",
    "FAILED_DELETE",
    "REPLICA_FAILURE",
    "STATUS_UPDATE_RETRIES",
    "calculate_status",
    "new_condition",
    "status_in_sync",
    "update_replicaset_status",
]

_log = get_logger(__name__)

REPLICA_FAILURE = "ReplicaFailure"
"""The condition set while creating or deleting pods fails."""
FAILED_CREATE = "FailedCreate"
"""Reason of :data:`REPLICA_FAILURE` (and event reason) when too few pods could be created."""
FAILED_DELETE = "FailedDelete"
"""Reason of :data:`REPLICA_FAILURE` (and event reason) when extra pods could not be deleted."""
STATUS_UPDATE_RETRIES = 1
"""How many times a failed status write is retried (on a freshly read ReplicaSet)."""

_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


# -- conditions --------------------------------------------------------------------------------


def new_condition(
    condition_type: str, status: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """A ReplicaSet condition that transitioned at ``now``."""
    return {
        "type": condition_type,
        "status": status,
        "lastTransitionTime": format_time(now),
        "reason": reason,
        "message": message,
    }


# -- calculation -------------------------------------------------------------------------------


def calculate_status(
    rs: Mapping[str, Any],
    active_pods: Sequence[Mapping[str, Any]],
    terminating_pods: Sequence[Mapping[str, Any]] | None,
    failure_message: str | None,
    now: datetime,
) -> dict[str, Any]:
    """The status ``rs`` should have, given the pods it owns (a new dict; ``rs`` is not
    modified).

    - ``replicas``: the active pods; ``fullyLabeledReplicas``: those carrying every label of
      the pod template; ``readyReplicas``: those ready; ``availableReplicas``: those ready
      for ``spec.minReadySeconds`` at ``now``.
    - ``terminatingReplicas``: ``len(terminating_pods)``; left out when ``terminating_pods``
      is ``None`` (the feature is off).
    - ``ReplicaFailure``: after a failure to manage replicas (``failure_message`` is not
      ``None``) and no such condition yet, a ``True`` condition whose reason is
      ``FailedCreate`` when there are too few pods, ``FailedDelete`` when too many (empty
      otherwise) and whose message is ``failure_message``; without a failure, the condition
      is removed. An existing condition is kept as it is while failures persist.

    Other fields (``observedGeneration``, other conditions) are carried over unchanged.
    """
    status: dict[str, Any] = deep_copy(dict(rs.get("status") or {}))
    spec = rs.get("spec") or {}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    template_selector = selector_from_set(template_labels, validate=False)
    min_ready_seconds = int(spec.get("minReadySeconds") or 0)
    fully_labeled = ready = available = 0
    for pod in active_pods:
        if template_selector.matches((pod.get("metadata") or {}).get("labels") or {}):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready_seconds, now):
                available += 1

    failure = get_condition(status, REPLICA_FAILURE)
    if failure_message is not None and failure is None:
        diff = len(active_pods) - int(spec.get("replicas", 1))
        reason = FAILED_CREATE if diff < 0 else FAILED_DELETE if diff > 0 else ""
        set_condition(status, new_condition(REPLICA_FAILURE, "True", reason, failure_message, now))
    elif failure_message is None and failure is not None:
        remove_condition(status, REPLICA_FAILURE)

    status["replicas"] = len(active_pods)
    status["fullyLabeledReplicas"] = fully_labeled
    status["readyReplicas"] = ready
    status["availableReplicas"] = available
    if terminating_pods is None:
        status.pop("terminatingReplicas", None)
    else:
        status["terminatingReplicas"] = len(terminating_pods)
    return status


def status_in_sync(rs: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """True when writing ``new_status`` would change nothing: the counts, the terminating
    count (absent and 0 differ), the conditions are equal and ``status.observedGeneration``
    already equals ``metadata.generation``. (Missing counts are 0, as in Go.)"""
    status = rs.get("status") or {}
    generation = (rs.get("metadata") or {}).get("generation") or 0
    return (
        all((status.get(k) or 0) == (new_status.get(k) or 0) for k in _COUNTS)
        and status.get("terminatingReplicas") == new_status.get("terminatingReplicas")
        and generation == (status.get("observedGeneration") or 0)
        and (status.get("conditions") or []) == (new_status.get("conditions") or [])
    )


# -- the write ---------------------------------------------------------------------------------


async def update_replicaset_status(
    client: Client,
    rs: Mapping[str, Any],
    new_status: Mapping[str, Any],
    *,
    resource: Resource = REPLICASETS,
) -> Object:
    """Write ``new_status`` (with ``observedGeneration`` set to ``rs``'s generation) to
    ``replicasets/status`` (the ``status`` of ``resource``), unless :func:`status_in_sync`;
    returns the ReplicaSet as stored (``rs`` itself when nothing was written).

    The write carries ``rs``'s resourceVersion. If it fails for any reason, the ReplicaSet is
    read afresh and the write is tried again on that copy (:data:`STATUS_UPDATE_RETRIES`
    times); the last write error is raised, or the read's error if the read fails. ``rs`` is
    never modified.
    """
    if status_in_sync(rs, new_status):
        return dict(rs)
    meta = rs.get("metadata") or {}
    status = {**new_status, "observedGeneration": meta.get("generation") or 0}
    current: Mapping[str, Any] = rs
    attempt = 0
    while True:
        _log.debug(
            f"updating status of {resource.kind}",
            key=f"{meta.get('namespace')}/{meta.get('name')}",
            change=_describe_change(current.get("status") or {}, status),
        )
        try:
            return await client.update_status(resource, {**current, "status": status})
        except Exception:
            if attempt >= STATUS_UPDATE_RETRIES:
                raise
        attempt += 1
        current = await client.get(resource, meta["name"], namespace=meta.get("namespace"))


def _describe_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    fields = (*_COUNTS, "terminatingReplicas", "observedGeneration")
    return ", ".join(f"{k} {old.get(k)}->{new.get(k)}" for k in fields)
