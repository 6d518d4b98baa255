"""A Deployment's status, computed from its ReplicaSets, and writing it when it changed.

- ``replicas`` / ``updatedReplicas``: pods that exist (``status.replicas``) in all / the new
  ReplicaSets; ``readyReplicas`` / ``availableReplicas``: summed over all of them;
- ``unavailableReplicas``: ``max(0, sum of spec.replicas - available)``;
- ``terminatingReplicas``: summed ``status.terminatingReplicas`` (the
  DeploymentReplicaSetTerminatingReplicas feature, on by default since 1.35), left out when
  a ReplicaSet's count is unknown;
- ``observedGeneration``: the Deployment's generation; ``collisionCount`` kept;
- conditions kept, with ``Available`` set from ``available >= replicas - maxUnavailable``.

Statuses are dicts shaped as the server serialises them (zero counts left out), and compared
field by field with absent counts reading as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final

from kcontrol.client import Object, deep_copy

from ._conditions import (
    AVAILABLE,
    MINIMUM_REPLICAS_AVAILABLE,
    MINIMUM_REPLICAS_UNAVAILABLE,
    new_condition,
    set_condition,
)
from ._fields import generation, spec_replicas, status
from ._replicas import max_unavailable, replica_count
from ._replicasets import (
    actual_replica_count,
    available_replica_count,
    ready_replica_count,
    terminating_replica_count,
)
from ._writes import SyncContext, write_final_status

__all__ = ["calculate_status", "status_equal", "sync_deployment_status"]

_COUNTS: Final = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
)
"""Status fields that Go serialises with ``omitempty`` (absent when 0)."""


def _compact(deployment_status: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(deployment_status)
    for field in _COUNTS:
        if not result.get(field):
            result.pop(field, None)
    if not result.get("conditions"):
        result.pop("conditions", None)
    for field in ("terminatingReplicas", "collisionCount"):
        if result.get(field) is None:
            result.pop(field, None)
    return result


def status_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two statuses are the same, absent counts reading as 0 and absent pointers
    (``terminatingReplicas``, ``collisionCount``) as unset."""
    return _compact(a) == _compact(b)


def calculate_status(
    all_replica_sets: Sequence[Object | None],
    new_rs: Object | None,
    deployment: Mapping[str, Any],
    ctx: SyncContext,
) -> dict[str, Any]:
    """The status the Deployment should have given its ReplicaSets (see the module
    docstring); the Deployment is not changed."""
    available = available_replica_count(all_replica_sets)
    unavailable = max(0, replica_count(all_replica_sets) - available)
    current = status(deployment)
    new_status: dict[str, Any] = {
        "observedGeneration": generation(deployment),
        "replicas": actual_replica_count(all_replica_sets),
        "updatedReplicas": actual_replica_count([new_rs]),
        "readyReplicas": ready_replica_count(all_replica_sets),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    terminating = terminating_replica_count(all_replica_sets)
    if terminating is not None:
        new_status["terminatingReplicas"] = terminating
    if current.get("collisionCount") is not None:
        new_status["collisionCount"] = current["collisionCount"]
    conditions = current.get("conditions")
    if conditions:
        new_status["conditions"] = deep_copy(list(conditions))
    if available >= spec_replicas(deployment) - max_unavailable(deployment):
        condition = new_condition(
            AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            ctx.now(),
        )
    else:
        condition = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            ctx.now(),
        )
    set_condition(new_status, condition)
    return _compact(new_status)


async def sync_deployment_status(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    new_rs: Object | None,
    deployment: MutableMapping[str, Any],
) -> None:
    """Write the calculated status if it differs from the Deployment's (the caller's copy,
    which takes the new status)."""
    new_status = calculate_status(all_replica_sets, new_rs, deployment, ctx)
    if status_equal(status(deployment), new_status):
        return
    deployment["status"] = new_status
    await write_final_status(ctx, deployment)
