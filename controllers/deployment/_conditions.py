"""Deployment conditions and the predicates of rollout progress.

Condition types are ``Available``, ``Progressing`` and ``ReplicaFailure``; the reasons below
are what ``kubectl rollout status`` and users' tooling match on, so they are upstream's
verbatim. Conditions are dicts as in the API (``type``, ``status``, ``lastUpdateTime``,
``lastTransitionTime``, ``reason``, ``message``); times are RFC 3339 UTC strings with second
precision, as ``metav1.Time`` serialises.

The status functions work on a status dict the caller owns (a copy), like upstream's pointer
arguments. Reading and removing a condition are the shared
:func:`~kcontrol_controllers.conditions.get_condition` and
:func:`~kcontrol_controllers.conditions.remove_condition`; setting one keeps the Deployment's
own rule (:func:`set_condition`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping
from datetime import datetime, timedelta
from typing import Any, Final

from kcontrol.metatime import ZERO_TIME, format_time, parse_time

from .. import conditions
from ._fields import generation, spec, spec_replicas, status, status_int

__all__ = [
    "AVAILABLE",
    "FAILED_RS_CREATE_REASON",
    "FOUND_NEW_RS_REASON",
    "MINIMUM_REPLICAS_AVAILABLE",
    "MINIMUM_REPLICAS_UNAVAILABLE",
    "NEW_REPLICA_SET_REASON",
    "NEW_RS_AVAILABLE_REASON",
    "PAUSED_DEPLOY_REASON",
    "PROGRESSING",
    "REPLICA_FAILURE",
    "REPLICA_SET_UPDATED_REASON",
    "RESUMED_DEPLOY_REASON",
    "TIMED_OUT_REASON",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "has_progress_deadline",
    "new_condition",
    "progress_deadline_seconds",
    "replica_set_to_deployment_condition",
    "seconds_until_deadline",
    "set_condition",
]

AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
REPLICA_FAILURE: Final = "ReplicaFailure"

# Progressing reasons.
NEW_REPLICA_SET_REASON: Final = "NewReplicaSetCreated"
"""A new ReplicaSet was created."""
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
"""The new ReplicaSet already existed when progress started being tracked."""
REPLICA_SET_UPDATED_REASON: Final = "ReplicaSetUpdated"
"""The rollout made progress."""
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
"""The rollout completed."""
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
"""The new ReplicaSet could not be created."""
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
"""No progress within ``progressDeadlineSeconds``."""
PAUSED_DEPLOY_REASON: Final = "DeploymentPaused"
RESUMED_DEPLOY_REASON: Final = "DeploymentResumed"

# Available reasons.
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"

_INT32_MAX: Final = 2**31 - 1


def new_condition(
    condition_type: str, condition_status: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """A condition whose update and transition times are ``now``."""
    stamp = format_time(now)
    return {
        "type": condition_type,
        "status": condition_status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def set_condition(
    deployment_status: MutableMapping[str, Any], condition: Mapping[str, Any]
) -> None:
    """Put ``condition`` into the status (which the caller owns), replacing the one of its type
    (upstream ``SetDeploymentCondition``): the shared
    :func:`~kcontrol_controllers.conditions.set_condition` - nothing changes if a condition of
    that type already has the same status and reason, the condition goes last - except that
    when only the reason changes, the old ``lastTransitionTime`` is kept.
    """
    current = conditions.get_condition(deployment_status, condition["type"])
    if current is not None and current.get("status") == condition.get("status"):
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    conditions.set_condition(deployment_status, condition)


def replica_set_to_deployment_condition(condition: Mapping[str, Any]) -> dict[str, Any]:
    """A ReplicaSet condition as a Deployment condition (both times from its transition)."""
    return {
        "type": condition.get("type"),
        "status": condition.get("status"),
        "lastUpdateTime": condition.get("lastTransitionTime"),
        "lastTransitionTime": condition.get("lastTransitionTime"),
        "reason": condition.get("reason"),
        "message": condition.get("message"),
    }


# -- progress ----------------------------------------------------------------------------------


def progress_deadline_seconds(deployment: Mapping[str, Any]) -> int | None:
    value = spec(deployment).get("progressDeadlineSeconds")
    return None if value is None else int(value)


def has_progress_deadline(deployment: Mapping[str, Any]) -> bool:
    """Whether progress is tracked: ``progressDeadlineSeconds`` set and not MaxInt32."""
    deadline = progress_deadline_seconds(deployment)
    return deadline is not None and deadline != _INT32_MAX


def deployment_complete(deployment: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Whether the rollout is done: every replica updated and available, no extra old one,
    and the status is of the current generation."""
    replicas = spec_replicas(deployment)
    return (
        int(new_status.get("updatedReplicas") or 0) == replicas
        and int(new_status.get("replicas") or 0) == replicas
        and int(new_status.get("availableReplicas") or 0) == replicas
        and int(new_status.get("observedGeneration") or 0) >= generation(deployment)
    )


def deployment_progressing(deployment: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Whether ``new_status`` shows progress over the Deployment's current status: more
    updated, ready or available replicas, or fewer old ones."""

    def of(source: Mapping[str, Any], field: str) -> int:
        return int(source.get(field) or 0)

    old = status(deployment)
    old_old_replicas = of(old, "replicas") - of(old, "updatedReplicas")
    new_old_replicas = of(new_status, "replicas") - of(new_status, "updatedReplicas")
    return (
        of(new_status, "updatedReplicas") > of(old, "updatedReplicas")
        or new_old_replicas < old_old_replicas
        or of(new_status, "readyReplicas") > status_int(deployment, "readyReplicas")
        or of(new_status, "availableReplicas") > status_int(deployment, "availableReplicas")
    )


def deployment_timed_out(
    deployment: Mapping[str, Any], new_status: Mapping[str, Any], now: datetime
) -> bool:
    """Whether the rollout has made no progress for ``progressDeadlineSeconds``, measured
    from the ``lastUpdateTime`` of the Progressing condition in ``new_status``.

    Never when progress is not tracked, there is no Progressing condition, or it says the
    last rollout completed (the status may just be stale); always when it already says
    ``ProgressDeadlineExceeded``.
    """
    if not has_progress_deadline(deployment):
        return False
    condition = conditions.get_condition(new_status, PROGRESSING)
    if condition is None:
        return False
    if condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time(condition.get("lastUpdateTime")) or ZERO_TIME
    deadline = progress_deadline_seconds(deployment) or 0
    return since + timedelta(seconds=deadline) < now


def seconds_until_deadline(deployment: Mapping[str, Any], now: datetime) -> float:
    """Seconds from ``now`` until the Deployment's progress deadline, counted from the
    ``lastUpdateTime`` of its current Progressing condition (``-inf`` without one)."""
    condition = conditions.get_condition(status(deployment), PROGRESSING)
    since = parse_time(condition.get("lastUpdateTime")) if condition else None
    deadline = progress_deadline_seconds(deployment)
    if since is None or deadline is None:
        return -math.inf
    return (since + timedelta(seconds=deadline) - now).total_seconds()
