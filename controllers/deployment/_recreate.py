"""The Recreate strategy: every old pod is gone before a new one is created.

A sync scales every active old ReplicaSet to 0 (and writes the status); while any old pod
still runs - an old ReplicaSet still reports replicas, or one of its pods is not Failed or
Succeeded - it only writes the status; then it creates the new ReplicaSet (never earlier, so
nothing is scaled up before everything was scaled down) or scales it to ``spec.replicas``,
cleans up history once complete, and writes the status. The pod delete handler brings a
Recreate Deployment back when its last pod is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import Result

from ._conditions import deployment_complete
from ._fields import spec_replicas, status, uid_of
from ._progress import sync_rollout_status
from ._replicasets import active_replica_sets, actual_replica_count
from ._scale import scale_replica_set_and_record_event
from ._sync import cleanup_deployment, get_all_replica_sets_and_sync_revision
from ._writes import SyncContext

__all__ = ["old_pods_running", "rollout_recreate", "scale_down_old_replica_sets_for_recreate"]

PodMap = Mapping[str, Sequence[Mapping[str, Any]]]
"""Pods of a Deployment grouped by the UID of the ReplicaSet controlling them."""

_TERMINAL_PHASES = frozenset({"Failed", "Succeeded"})


async def rollout_recreate(
    ctx: SyncContext,
    deployment: MutableMapping[str, Any],
    rs_list: Sequence[Object],
    pod_map: PodMap,
) -> Result | None:
    """One step of a Recreate rollout (see the module docstring)."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    all_rss: list[Object | None] = [*old, new_rs]

    if await scale_down_old_replica_sets_for_recreate(ctx, active_replica_sets(old), deployment):
        return await sync_rollout_status(ctx, all_rss, new_rs, deployment)

    if old_pods_running(new_rs, old, pod_map):
        return await sync_rollout_status(ctx, all_rss, new_rs, deployment)

    if new_rs is None:
        new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, True)
        assert new_rs is not None
        all_rss = [*old, new_rs]

    await scale_replica_set_and_record_event(ctx, new_rs, spec_replicas(deployment), deployment)

    if deployment_complete(deployment, status(deployment)):
        await cleanup_deployment(ctx, old, deployment)
    return await sync_rollout_status(ctx, all_rss, new_rs, deployment)


async def scale_down_old_replica_sets_for_recreate(
    ctx: SyncContext, old_replica_sets: Sequence[Object], deployment: Mapping[str, Any]
) -> bool:
    """Scale every given old ReplicaSet to 0; True if any was resized."""
    scaled_any = False
    for rs in old_replica_sets:
        if spec_replicas(rs) == 0:
            continue
        scaled, _ = await scale_replica_set_and_record_event(ctx, rs, 0, deployment)
        scaled_any = scaled_any or scaled
    return scaled_any


def old_pods_running(
    new_rs: Mapping[str, Any] | None, old_replica_sets: Sequence[Object], pod_map: PodMap
) -> bool:
    """Whether an old pod may still run: an old ReplicaSet reports replicas, or a pod of a
    ReplicaSet other than the new one is in any phase but Failed or Succeeded (Unknown
    counts as running)."""
    if actual_replica_count(old_replica_sets) > 0:
        return True
    new_uid = uid_of(new_rs) if new_rs is not None else None
    for rs_uid, pods in pod_map.items():
        if new_uid is not None and rs_uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") not in _TERMINAL_PHASES:
                return True
    return False
