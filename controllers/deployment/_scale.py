"""Resizing ReplicaSets: one at a time, and proportionally when a Deployment is resized.

Every resize also records the Deployment's size on the ReplicaSet (``desired-replicas``,
``max-replicas``), which later scaling-event detection and proportional scaling read back,
and announces itself with a ``ScalingReplicaSet`` event on the Deployment:
``Scaled up replica set web-abc from 1 to 3`` (the wording of Kubernetes 1.36).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import Object
from kcontrol.events import EVENT_TYPE_NORMAL

from ._annotations import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    replicas_annotations_need_update,
)
from ._fields import annotations_of, is_rolling_update, name_of, spec_replicas
from ._replicas import max_surge, proportional_sizes, replica_count
from ._replicasets import (
    active_replica_sets,
    find_active_or_latest,
    is_saturated,
    sorted_by_size_newer,
    sorted_by_size_older,
)
from ._writes import SyncContext, patch_replica_set

__all__ = ["scale", "scale_replica_set", "scale_replica_set_and_record_event"]


async def scale_replica_set_and_record_event(
    ctx: SyncContext, replica_set: Object, new_scale: int, deployment: Mapping[str, Any]
) -> tuple[bool, Object]:
    """Resize ``replica_set`` to ``new_scale`` unless it has that size already.

    Returns ``(scaled, the ReplicaSet as it is now)``; API errors propagate.
    """
    if spec_replicas(replica_set) == new_scale:
        return False, replica_set
    return await scale_replica_set(ctx, replica_set, new_scale, deployment)


async def scale_replica_set(
    ctx: SyncContext,
    replica_set: Object,
    new_scale: int,
    deployment: Mapping[str, Any],
) -> tuple[bool, Object]:
    """Set ``replica_set``'s size and replicas annotations (one patch, only if either
    changes); an event is recorded when the size changed, saying "up" or "down" as this
    ReplicaSet moved (in proportional scaling one may shrink while the Deployment grows).
    Returns ``(scaled, the ReplicaSet as it is now)``."""
    replicas = spec_replicas(deployment)
    maximum = replicas + max_surge(deployment)
    old_scale = spec_replicas(replica_set)
    size_needs_update = old_scale != new_scale
    if not size_needs_update and not replicas_annotations_need_update(
        replica_set, replicas, maximum
    ):
        return False, replica_set
    annotations = {
        **annotations_of(replica_set),
        DESIRED_REPLICAS_ANNOTATION: str(replicas),
        MAX_REPLICAS_ANNOTATION: str(maximum),
    }
    updated = await patch_replica_set(
        ctx,
        replica_set,
        replicas=new_scale if size_needs_update else None,
        annotations=annotations,
    )
    if size_needs_update:
        ctx.recorder.eventf(
            deployment,
            EVENT_TYPE_NORMAL,
            "ScalingReplicaSet",
            "Scaled %s replica set %s from %d to %d",
            "up" if old_scale < new_scale else "down",
            name_of(updated),
            old_scale,
            new_scale,
        )
    return size_needs_update, updated


async def scale(
    ctx: SyncContext,
    deployment: Mapping[str, Any],
    new_rs: Object | None,
    old_replica_sets: Sequence[Object],
) -> None:
    """Resize the ReplicaSets after the Deployment's ``spec.replicas`` changed (or while it is
    paused), without advancing the rollout.

    - One active ReplicaSet (or none: the new one, else the newest): it gets
      ``spec.replicas``.
    - A saturated new ReplicaSet: every active old one goes to 0.
    - Otherwise, for RollingUpdate only, the difference between ``replicas + maxSurge`` and
      the current total is spread over the active ReplicaSets in proportion to their size
      (:func:`~kcontrol_controllers.deployment._replicas.replica_set_proportion`), the larger first
      - newer first when growing, older first when shrinking - with what rounding leaves
      over going to the first; none goes below 0. The first failing write aborts.
    """
    target = find_active_or_latest(new_rs, old_replica_sets)
    replicas = spec_replicas(deployment)
    if target is not None:
        if spec_replicas(target) == replicas:
            return
        await scale_replica_set_and_record_event(ctx, target, replicas, deployment)
        return

    if is_saturated(deployment, new_rs):
        for old in active_replica_sets(old_replica_sets):
            await scale_replica_set_and_record_event(ctx, old, 0, deployment)
        return

    if not is_rolling_update(deployment):
        return
    active = active_replica_sets([*old_replica_sets, new_rs])
    allowed = replicas + max_surge(deployment) if replicas > 0 else 0
    to_add = allowed - replica_count(active)
    if to_add > 0:
        active = sorted_by_size_newer(active)
    elif to_add < 0:
        active = sorted_by_size_older(active)

    for rs, size in zip(active, proportional_sizes(active, deployment, to_add), strict=True):
        await scale_replica_set(ctx, rs, size, deployment)
