"""The RollingUpdate strategy: grow the new ReplicaSet within ``maxSurge``, shrink the old
ones within ``maxUnavailable``, one step per sync.

A sync scales up if it can (and writes the status), else scales down if it can (and writes
the status), else - once the rollout is complete - cleans up old ReplicaSets, and writes the
status with the rollout's progress. The ReplicaSets' status updates bring the Deployment back
for the next step.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import Result
from kcontrol.logging import get_logger

from ._conditions import deployment_complete
from ._fields import name_of, spec_replicas, status, status_int
from ._progress import sync_rollout_status
from ._replicas import max_unavailable, new_rs_new_replicas, replica_count
from ._replicasets import (
    active_replica_sets,
    available_replica_count,
    sorted_by_creation,
)
from ._scale import scale_replica_set_and_record_event
from ._sync import cleanup_deployment, get_all_replica_sets_and_sync_revision
from ._writes import SyncContext

__all__ = [
    "cleanup_unhealthy_replicas",
    "reconcile_new_replica_set",
    "reconcile_old_replica_sets",
    "rollout_rolling",
    "scale_down_old_replica_sets_for_rolling_update",
]

_log = get_logger(__name__)


async def rollout_rolling(
    ctx: SyncContext, deployment: MutableMapping[str, Any], rs_list: Sequence[Object]
) -> Result | None:
    """One step of a rolling update (see the module docstring)."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, True)
    assert new_rs is not None  # created when missing
    all_rss: list[Object | None] = [*old, new_rs]

    if await reconcile_new_replica_set(ctx, all_rss, new_rs, deployment):
        return await sync_rollout_status(ctx, all_rss, new_rs, deployment)

    if await reconcile_old_replica_sets(ctx, all_rss, active_replica_sets(old), new_rs, deployment):
        return await sync_rollout_status(ctx, all_rss, new_rs, deployment)

    if deployment_complete(deployment, status(deployment)):
        await cleanup_deployment(ctx, old, deployment)
    return await sync_rollout_status(ctx, all_rss, new_rs, deployment)


async def reconcile_new_replica_set(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    new_rs: Object,
    deployment: Mapping[str, Any],
) -> bool:
    """Bring the new ReplicaSet towards ``spec.replicas``: down at once if it is larger,
    up by what :func:`~kcontrol_controllers.deployment._replicas.new_rs_new_replicas` allows.
    True if it was resized."""
    replicas = spec_replicas(deployment)
    current = spec_replicas(new_rs)
    if current == replicas:
        return False
    if current > replicas:
        scaled, _ = await scale_replica_set_and_record_event(ctx, new_rs, replicas, deployment)
        return scaled
    new_size = new_rs_new_replicas(deployment, all_replica_sets, new_rs)
    scaled, _ = await scale_replica_set_and_record_event(ctx, new_rs, new_size, deployment)
    return scaled


async def reconcile_old_replica_sets(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    old_replica_sets: Sequence[Object],
    new_rs: Object,
    deployment: Mapping[str, Any],
) -> bool:
    """Shrink the old ReplicaSets as far as availability allows. True if any was resized.

    At most ``all pods - minAvailable - unavailable pods of the new ReplicaSet`` old pods
    may go (so new pods that are not available yet are never counted on). Unhealthy old
    replicas go first, as removing them costs no availability; then old ReplicaSets shrink,
    oldest first, by what is available beyond ``minAvailable``. A failed write ends the step
    without error, as upstream: the next sync retries.
    """
    if replica_count(old_replica_sets) == 0:
        return False
    all_pods = replica_count(all_replica_sets)
    min_available = spec_replicas(deployment) - max_unavailable(deployment)
    new_rs_unavailable = spec_replicas(new_rs) - status_int(new_rs, "availableReplicas")
    max_scaled_down = all_pods - min_available - new_rs_unavailable
    if max_scaled_down <= 0:
        return False

    try:
        old, cleaned = await cleanup_unhealthy_replicas(
            ctx, old_replica_sets, deployment, max_scaled_down
        )
    except Exception as error:  # upstream drops the error too; the next sync retries
        _log.debug(
            "cleaning up unhealthy replicas failed",
            deployment=name_of(deployment),
            error=str(error),
        )
        return False
    try:
        scaled_down = await scale_down_old_replica_sets_for_rolling_update(
            ctx, [*old, new_rs], old, deployment
        )
    except Exception as error:
        _log.debug(
            "scaling down old replica sets failed", deployment=name_of(deployment), error=str(error)
        )
        return False
    return cleaned + scaled_down > 0


async def cleanup_unhealthy_replicas(
    ctx: SyncContext,
    old_replica_sets: Sequence[Object],
    deployment: Mapping[str, Any],
    max_cleanup_count: int,
) -> tuple[list[Object], int]:
    """Remove up to ``max_cleanup_count`` unavailable replicas from the old ReplicaSets,
    oldest first. Returns the old ReplicaSets as they are now (oldest first) and how many
    replicas were removed."""
    old = sorted_by_creation(old_replica_sets)
    total = 0
    for index, rs in enumerate(old):
        if total >= max_cleanup_count:
            break
        size = spec_replicas(rs)
        available = status_int(rs, "availableReplicas")
        if size in (0, available):
            continue
        count = min(max_cleanup_count - total, size - available)
        if count < 0:
            raise ValueError(
                f"when cleaning up unhealthy replicas, got invalid request to scale down "
                f"{name_of(rs)} {size} -> {size - count}"
            )
        _, old[index] = await scale_replica_set_and_record_event(ctx, rs, size - count, deployment)
        total += count
    return old, total


async def scale_down_old_replica_sets_for_rolling_update(
    ctx: SyncContext,
    all_replica_sets: Sequence[Object | None],
    old_replica_sets: Sequence[Object],
    deployment: Mapping[str, Any],
) -> int:
    """Shrink old ReplicaSets, oldest first, by the available pods beyond ``minAvailable``;
    returns how many replicas were removed."""
    min_available = spec_replicas(deployment) - max_unavailable(deployment)
    available = available_replica_count(all_replica_sets)
    if available <= min_available:
        return 0
    to_scale_down = available - min_available
    total = 0
    for rs in sorted_by_creation(old_replica_sets):
        if total >= to_scale_down:
            break
        size = spec_replicas(rs)
        if size == 0:
            continue
        count = min(size, to_scale_down - total)
        await scale_replica_set_and_record_event(ctx, rs, size - count, deployment)
        total += count
    return total
