"""Rollout progress: the Progressing and ReplicaFailure conditions, and the deadline check.

With ``progressDeadlineSeconds`` set, a rollout's Progressing condition says
``NewReplicaSetAvailable`` once it completed, ``ReplicaSetUpdated`` while it moves (its
``lastUpdateTime`` refreshed on every sign of progress), and ``ProgressDeadlineExceeded``
(status False) once nothing moved for that long. Nothing else wakes a stuck Deployment, so
when a sync finds nothing to write it asks to be synced again just after the deadline.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import Result

from ..conditions import get_condition, remove_condition
from ._autorollback import ROLLED_BACK, Hold, hold_conditions
from ._conditions import (
    NEW_RS_AVAILABLE_REASON,
    PROGRESSING,
    REPLICA_FAILURE,
    REPLICA_SET_UPDATED_REASON,
    TIMED_OUT_REASON,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    has_progress_deadline,
    new_condition,
    replica_set_to_deployment_condition,
    seconds_until_deadline,
    set_condition,
)
from ._fields import name_of, status
from ._status import calculate_status, status_equal
from ._writes import SyncContext, write_final_status

__all__ = ["replica_failures", "requeue_stuck_deployment", "sync_rollout_status"]

_DEADLINE_SKEW = 1.0
"""Seconds added to a deadline requeue, so the check runs after the deadline, not at it."""


def _subject(deployment: MutableMapping[str, Any], new_rs: Object | None) -> str:
    if new_rs is not None:
        return f'ReplicaSet "{name_of(new_rs)}"'
    return f'Deployment "{name_of(deployment)}"'


async def sync_rollout_status(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    new_rs: Object | None,
    deployment: MutableMapping[str, Any],
    *,
    hold: Hold | None = None,
) -> Result | None:
    """Write the status with the rollout's progress; if nothing changed, return the requeue
    that the deadline check needs (see :func:`requeue_stuck_deployment`).

    With ``hold`` (a Deployment rolled back automatically) the Progressing and RolledBack
    conditions are the hold's (:func:`~._autorollback.hold_conditions`); without, a
    RolledBack condition left from a hold is removed."""
    new_status = calculate_status(all_replica_sets, new_rs, deployment, ctx)
    if hold is not None:
        hold_conditions(new_status, status(deployment), hold, ctx.now())
        return await _write_rollout_status(ctx, all_replica_sets, new_rs, deployment, new_status)
    remove_condition(new_status, ROLLED_BACK)
    if not has_progress_deadline(deployment):
        remove_condition(new_status, PROGRESSING)

    current = get_condition(status(deployment), PROGRESSING)
    is_complete_deployment = (
        int(new_status.get("replicas") or 0) == int(new_status.get("updatedReplicas") or 0)
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE_REASON
    )
    if has_progress_deadline(deployment) and not is_complete_deployment:
        subject = _subject(deployment, new_rs)
        if deployment_complete(deployment, new_status):
            set_condition(
                new_status,
                new_condition(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE_REASON,
                    f"{subject} has successfully progressed.",
                    ctx.now(),
                ),
            )
        elif deployment_progressing(deployment, new_status):
            condition = new_condition(
                PROGRESSING,
                "True",
                REPLICA_SET_UPDATED_REASON,
                f"{subject} is progressing.",
                ctx.now(),
            )
            # Progress refreshes lastUpdateTime even when the reason stays the same, which
            # set_condition would not do: replace the condition, keeping the transition time
            # if it was already True.
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(new_status, PROGRESSING)
            set_condition(new_status, condition)
        elif deployment_timed_out(deployment, new_status, ctx.now()):
            set_condition(
                new_status,
                new_condition(
                    PROGRESSING,
                    "False",
                    TIMED_OUT_REASON,
                    f"{subject} has timed out progressing.",
                    ctx.now(),
                ),
            )
    return await _write_rollout_status(ctx, all_replica_sets, new_rs, deployment, new_status)


async def _write_rollout_status(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    new_rs: Object | None,
    deployment: MutableMapping[str, Any],
    new_status: dict[str, Any],
) -> Result | None:
    """The ReplicaFailure condition, then the write (or the deadline's requeue)."""
    failures = replica_failures(all_replica_sets, new_rs)
    if failures:
        set_condition(new_status, failures[0])
    else:
        remove_condition(new_status, REPLICA_FAILURE)

    if status_equal(status(deployment), new_status):
        return requeue_stuck_deployment(ctx, deployment, new_status)
    deployment["status"] = new_status
    await write_final_status(ctx, deployment)
    return None


def replica_failures(
    all_replica_sets: Sequence[Object | None], new_rs: Object | None
) -> list[dict[str, Any]]:
    """The ReplicaFailure conditions of the new ReplicaSet, or if it has none, those of all
    ReplicaSets, as Deployment conditions."""

    def of(rs: Object | None) -> list[dict[str, Any]]:
        if rs is None:
            return []
        return [
            replica_set_to_deployment_condition(c)
            for c in status(rs).get("conditions") or ()
            if c.get("type") == REPLICA_FAILURE
        ]

    from_new = of(new_rs)
    if from_new:
        return from_new
    return [condition for rs in all_replica_sets for condition in of(rs)]


def requeue_stuck_deployment(
    ctx: SyncContext, deployment: MutableMapping[str, Any], new_status: MutableMapping[str, Any]
) -> Result | None:
    """When to look at a rollout again to see whether it timed out.

    ``None`` without a deadline or a Progressing condition, once complete, or once timed
    out. Otherwise a requeue one second after ``lastUpdateTime + progressDeadlineSeconds``;
    when less than a second is left, a rate-limited requeue now.
    """
    current = get_condition(status(deployment), PROGRESSING)
    if not has_progress_deadline(deployment) or current is None:
        return None
    if deployment_complete(deployment, new_status) or current.get("reason") == TIMED_OUT_REASON:
        return None
    after = seconds_until_deadline(deployment, ctx.now())
    if after < 1.0:
        return Result(requeue=True)
    return Result(requeue_after=after + _DEADLINE_SKEW)
