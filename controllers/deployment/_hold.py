"""One step of a Deployment held on an older ReplicaSet after a failed rollout: see
:mod:`._autorollback` for when, and for what the step does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from kcontrol.client import Object
from kcontrol.controller import Result
from kcontrol.events import EVENT_TYPE_WARNING
from kcontrol.logging import get_logger

from ._autorollback import (
    ROLLED_BACK,
    ROLLED_BACK_TO_ANNOTATION,
    AutoRollbackMetrics,
    Hold,
    hold_message,
)
from ._fields import (
    RECREATE,
    annotations_of,
    name_of,
    namespace_of,
    spec_replicas,
    strategy_type,
    uid_of,
)
from ._progress import sync_rollout_status
from ._recreate import PodMap, old_pods_running, scale_down_old_replica_sets_for_recreate
from ._replicasets import active_replica_sets
from ._rolling import reconcile_new_replica_set, reconcile_old_replica_sets
from ._scale import scale_replica_set_and_record_event
from ._sync import get_all_replica_sets_and_sync_revision
from ._writes import SyncContext, patch_replica_set

__all__ = ["roll_back"]

_log = get_logger(__name__)


async def roll_back(
    ctx: SyncContext,
    deployment: MutableMapping[str, Any],
    rs_list: Sequence[Object],
    hold: Hold,
    *,
    pod_map: Callable[[], PodMap],
    metrics: AutoRollbackMetrics,
) -> Result | None:
    """One step of a held Deployment (module docstring): record a new hold, move pods
    towards the target, write the status."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    failed = new_rs if new_rs is not None else hold.failed
    if hold.started:
        failed = await _record(ctx, deployment, failed, hold, metrics)
    by_uid = {uid_of(rs): rs for rs in old}
    goal = by_uid.get(uid_of(hold.target), hold.target)
    others = [rs for rs in [*old, failed] if uid_of(rs) != uid_of(goal)]
    all_rss: list[Object | None] = [*others, goal]
    held = Hold(failed, goal, started=False)

    if strategy_type(deployment) == RECREATE:
        if await scale_down_old_replica_sets_for_recreate(
            ctx, active_replica_sets(others), deployment
        ):
            return await sync_rollout_status(ctx, all_rss, failed, deployment, hold=held)
        if not old_pods_running(goal, others, pod_map()):
            await scale_replica_set_and_record_event(
                ctx, goal, spec_replicas(deployment), deployment
            )
        return await sync_rollout_status(ctx, all_rss, failed, deployment, hold=held)

    if not await reconcile_new_replica_set(ctx, all_rss, goal, deployment):
        await reconcile_old_replica_sets(
            ctx, all_rss, active_replica_sets(others), goal, deployment
        )
    return await sync_rollout_status(ctx, all_rss, failed, deployment, hold=held)


async def _record(
    ctx: SyncContext,
    deployment: Mapping[str, Any],
    failed: Object,
    hold: Hold,
    metrics: AutoRollbackMetrics,
) -> Object:
    """Write the hold on the failed ReplicaSet, then say so (event, log, metric)."""
    annotations = {**annotations_of(failed), ROLLED_BACK_TO_ANNOTATION: name_of(hold.target)}
    written = await patch_replica_set(ctx, failed, annotations=annotations)
    message = hold_message(Hold(failed, hold.target, started=True))
    ctx.recorder.event(deployment, EVENT_TYPE_WARNING, ROLLED_BACK, message)
    _log.info(
        "rolled back a Deployment whose rollout failed",
        deployment=f"{namespace_of(deployment)}/{name_of(deployment)}",
        failed=name_of(failed),
        target=name_of(hold.target),
    )
    metrics.rollbacks.inc()
    return written
