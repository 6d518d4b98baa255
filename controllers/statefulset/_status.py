"""A StatefulSet's status, computed from its pods, and when it must be written.

Each sync computes a fresh status (:func:`new_status`, :func:`update_replica_counts`):

- ``replicas`` counts the created pods (the API server gave them a phase);
- ``readyReplicas`` the running and ready ones, ``availableReplicas`` those of them ready for
  ``spec.minReadySeconds``;
- ``currentReplicas`` / ``updatedReplicas`` the created, not terminating pods labelled with
  the current / update revision.

Before writing it, :func:`complete_rolling_update` ends a finished ``RollingUpdate`` (every
replica updated and ready: the update revision becomes the current one), and
:func:`inconsistent_status` says whether it differs from the set's at all - the write is
skipped otherwise.

Statuses are dicts in the API's field names; missing counts read as 0 and missing revisions
as ``""``, Go's zero values. Only the functions named for it modify the status they are
given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from datetime import datetime
from typing import Any, Final

from kcontrol.client import Object

from ._fields import meta, spec_replicas, status, update_strategy_type
from ._names import ROLLING_UPDATE
from ._pods import get_pod_revision
from ._podstate import is_created, is_running_and_available, is_running_and_ready, is_terminating

__all__ = [
    "REPLICA_COUNT_FIELDS",
    "complete_rolling_update",
    "decides_next_pass",
    "inconsistent_status",
    "new_status",
    "replica_counts",
    "update_replica_counts",
]

REPLICA_COUNT_FIELDS: Final = (
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "currentReplicas",
    "updatedReplicas",
)
"""The counts :func:`replica_counts` computes."""

_COMPARED_FIELDS: Final = (*REPLICA_COUNT_FIELDS, "currentRevision", "updateRevision")


def new_status(
    set_: Mapping[str, Any], current_revision: str, update_revision: str, collision_count: int
) -> Object:
    """The status a sync starts from: the set's generation observed, the two revisions and
    the collision count; the counts are added by :func:`update_replica_counts`."""
    return {
        "observedGeneration": int(meta(set_).get("generation") or 0),
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": collision_count,
    }


def replica_counts(
    pods: Iterable[Mapping[str, Any]],
    min_ready_seconds: int,
    current_revision: str,
    update_revision: str,
    now: datetime,
) -> dict[str, int]:
    """The counts of ``pods`` (upstream ``computeReplicaStatus``), keyed by
    :data:`REPLICA_COUNT_FIELDS`."""
    counts = dict.fromkeys(REPLICA_COUNT_FIELDS, 0)
    for pod in pods:
        created = is_created(pod)
        if created:
            counts["replicas"] += 1
        if is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_running_and_available(pod, min_ready_seconds, now):
                counts["availableReplicas"] += 1
        if created and not is_terminating(pod):
            revision = get_pod_revision(pod)
            if revision == current_revision:
                counts["currentReplicas"] += 1
            if revision == update_revision:
                counts["updatedReplicas"] += 1
    return counts


def update_replica_counts(
    status_: MutableMapping[str, Any],
    min_ready_seconds: int,
    now: datetime,
    *pod_lists: Iterable[Mapping[str, Any]],
) -> None:
    """Set ``status_``'s counts (modified in place) to those of all ``pod_lists`` together
    (the replicas and the condemned pods), against its ``currentRevision`` and
    ``updateRevision`` (upstream ``updateStatus``)."""
    totals = dict.fromkeys(REPLICA_COUNT_FIELDS, 0)
    current, update = status_.get("currentRevision", ""), status_.get("updateRevision", "")
    for pods in pod_lists:
        for field, count in replica_counts(pods, min_ready_seconds, current, update, now).items():
            totals[field] += count
    status_.update(totals)


def _count(obj: Mapping[str, Any], field: str) -> int:
    return int(obj.get(field) or 0)


def complete_rolling_update(set_: Mapping[str, Any], status_: MutableMapping[str, Any]) -> None:
    """End a finished rolling update in ``status_`` (modified in place): with a
    ``RollingUpdate`` strategy, once ``replicas``, ``readyReplicas`` and ``updatedReplicas``
    all equal ``spec.replicas``, the update revision becomes the current revision and the
    updated replicas the current ones."""
    desired = spec_replicas(set_)
    if (
        update_strategy_type(set_) == ROLLING_UPDATE
        and _count(status_, "updatedReplicas") == desired
        and _count(status_, "readyReplicas") == desired
        and _count(status_, "replicas") == desired
    ):
        status_["currentReplicas"] = _count(status_, "updatedReplicas")
        status_["currentRevision"] = status_.get("updateRevision", "")


def decides_next_pass(set_: Mapping[str, Any], status_: Mapping[str, Any]) -> bool:
    """True when writing ``status_`` changes what the next pass reads back from the set's
    stored status: the current revision, the collision count, or - while the current and
    update revisions differ - the current replicas (below them, a re-created member takes
    the current revision). The other fields are reports nothing decides from."""
    stored = status(set_)
    current = status_.get("currentRevision") or ""
    if current != (stored.get("currentRevision") or ""):
        return True
    if _count(status_, "collisionCount") != _count(stored, "collisionCount"):
        return True
    rolling = current != (status_.get("updateRevision") or "")
    return rolling and _count(status_, "currentReplicas") != _count(stored, "currentReplicas")


def inconsistent_status(set_: Mapping[str, Any], status_: Mapping[str, Any]) -> bool:
    """True when ``status_`` must be written: it observed a newer generation than the set's
    status, or any count or revision differs. (``collisionCount`` and the conditions are
    not compared, as upstream.)"""
    current = status(set_)
    if _count(status_, "observedGeneration") > _count(current, "observedGeneration"):
        return True
    for field in _COMPARED_FIELDS:
        default: Any = "" if field.endswith("Revision") else 0
        if (status_.get(field) or default) != (current.get(field) or default):
            return True
    return False
