"""Steps every sync shares: finding (or creating) the new ReplicaSet, syncing revisions,
paused conditions, scaling events, history clean-up, and the status-only sync.

Each step takes the sync's own copy of the Deployment (``deployment``, a deep copy of the
cached object) and may change it - conditions, the revision annotation, the collision count -
as upstream changes its ``*apps.Deployment``; ReplicaSets are the cached objects and are only
read. API errors propagate to the sync, which requeues the Deployment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final

from kcontrol.client import REPLICASETS, Object, deep_copy
from kcontrol.errors import (
    NAMESPACE_TERMINATING_CAUSE,
    AlreadyExists,
    ApiError,
    NotFound,
    error_message,
    has_status_cause,
)
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kcontrol.logging import get_logger

from ..conditions import get_condition
from ._annotations import (
    REVISION_ANNOTATION,
    get_desired_replicas_annotation,
    rollback_to,
)
from ._autorollback import kept_by_hold
from ._conditions import (
    FAILED_RS_CREATE_REASON,
    FOUND_NEW_RS_REASON,
    NEW_REPLICA_SET_REASON,
    PAUSED_DEPLOY_REASON,
    PROGRESSING,
    RESUMED_DEPLOY_REASON,
    TIMED_OUT_REASON,
    has_progress_deadline,
    new_condition,
    set_condition,
)
from ._fields import (
    CONTROLLER_KIND,
    DEFAULT_UNIQUE_LABEL_KEY,
    annotations_of,
    deletion_timestamp,
    generation,
    is_controlled_by,
    meta,
    name_of,
    namespace_of,
    spec,
    spec_replicas,
    status,
    status_int,
    template_of,
    uid_of,
)
from ._hashing import compute_hash
from ._replicas import new_rs_new_replicas
from ._replicasets import (
    active_replica_sets,
    clone_and_add_label,
    clone_selector_and_add_label,
    equal_ignore_hash,
    find_new_replica_set,
    find_old_replica_sets,
)
from ._revisions import (
    MAX_REV_HISTORY_LENGTH_IN_CHARS,
    max_revision,
    set_deployment_revision,
    set_new_replica_set_annotations,
    sorted_by_revision,
)
from ._scale import scale
from ._status import sync_deployment_status
from ._writes import (
    SyncContext,
    delete_replica_set,
    patch_replica_set,
    update_deployment_status,
)

__all__ = [
    "check_paused_conditions",
    "cleanup_deployment",
    "get_all_replica_sets_and_sync_revision",
    "is_scaling_event",
    "replica_set_name",
    "sync",
    "sync_status_only",
]

_log = get_logger(__name__)

_INT32_MAX: Final = 2**31 - 1
_MAX_NAME_LENGTH: Final = 253
"""The longest object name (a DNS-1123 subdomain)."""


async def sync_status_only(
    ctx: SyncContext, deployment: MutableMapping[str, Any], rs_list: Sequence[Object]
) -> None:
    """Only write the status (a Deployment being deleted takes no other action)."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    await sync_deployment_status(ctx, [*old, new_rs], new_rs, deployment)


async def sync(
    ctx: SyncContext, deployment: MutableMapping[str, Any], rs_list: Sequence[Object]
) -> None:
    """Reconcile a scaling event or a paused Deployment: resize (see
    :func:`~kcontrol_controllers.deployment._scale.scale`), clean up old ReplicaSets when paused and
    no rollback is pending (keeping the one an automatic rollback holds to), write the
    status. The rollout does not advance."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    await scale(ctx, deployment, new_rs, old)
    if spec(deployment).get("paused") and rollback_to(deployment) is None:
        cleanable = [rs for rs in old if not kept_by_hold(new_rs, rs)]
        await cleanup_deployment(ctx, cleanable, deployment)
    await sync_deployment_status(ctx, [*old, new_rs], new_rs, deployment)


async def check_paused_conditions(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> None:
    """Record pausing (``DeploymentPaused``) or resuming (``DeploymentResumed``) in the
    Progressing condition, status Unknown, so that time spent paused never counts against
    the progress deadline. Only with a progress deadline, and never over a timed-out
    condition."""
    if not has_progress_deadline(deployment):
        return
    condition = get_condition(status(deployment), PROGRESSING)
    if condition is not None and condition.get("reason") == TIMED_OUT_REASON:
        return
    paused_condition_exists = condition is not None and (
        condition.get("reason") == PAUSED_DEPLOY_REASON
    )
    paused = bool(spec(deployment).get("paused"))
    if paused and not paused_condition_exists:
        reason, message = PAUSED_DEPLOY_REASON, "Deployment is paused"
    elif not paused and paused_condition_exists:
        reason, message = RESUMED_DEPLOY_REASON, "Deployment is resumed"
    else:
        return
    deployment_status = deployment.setdefault("status", {})
    set_condition(
        deployment_status, new_condition(PROGRESSING, "Unknown", reason, message, ctx.now())
    )
    await update_deployment_status(ctx, deployment)


async def get_all_replica_sets_and_sync_revision(
    ctx: SyncContext,
    deployment: MutableMapping[str, Any],
    rs_list: Sequence[Object],
    create_if_not_existed: bool,
) -> tuple[Object | None, list[Object]]:
    """``(new ReplicaSet or None, all old ReplicaSets)``, the new one with its revision (and
    the Deployment's) brought up to date, created if ``create_if_not_existed``."""
    _, all_old = find_old_replica_sets(deployment, rs_list)
    new_rs = await _get_new_replica_set(ctx, deployment, rs_list, all_old, create_if_not_existed)
    return new_rs, all_old


async def _get_new_replica_set(
    ctx: SyncContext,
    deployment: MutableMapping[str, Any],
    rs_list: Sequence[Object],
    old_replica_sets: Sequence[Object],
    create_if_not_existed: bool,
) -> Object | None:
    existing = find_new_replica_set(deployment, rs_list)
    new_revision = str(max_revision(old_replica_sets) + 1)
    if existing is not None:
        return await _sync_existing_new_replica_set(ctx, deployment, existing, new_revision)
    if not create_if_not_existed:
        return None
    return await _create_new_replica_set(ctx, deployment, old_replica_sets, new_revision)


async def _sync_existing_new_replica_set(
    ctx: SyncContext, deployment: MutableMapping[str, Any], existing: Object, new_revision: str
) -> Object:
    """Bring the new ReplicaSet's annotations and minReadySeconds up to date; once they are,
    copy its revision to the Deployment (and note when progress tracking found it).

    The ReplicaSet returned shares everything but its metadata and annotations with
    ``existing`` (the cache's object, when no patch was sent): callers read it and write
    through patches, never change it."""
    rs_copy = _with_own_annotations(existing)
    annotations_updated = set_new_replica_set_annotations(
        deployment, rs_copy, new_revision, True, MAX_REV_HISTORY_LENGTH_IN_CHARS
    )
    min_ready_seconds = int(spec(deployment).get("minReadySeconds") or 0)
    min_ready_needs_update = int(spec(existing).get("minReadySeconds") or 0) != min_ready_seconds
    if annotations_updated or min_ready_needs_update:
        return await patch_replica_set(
            ctx,
            existing,
            annotations=annotations_of(rs_copy),
            min_ready_seconds=min_ready_seconds if min_ready_needs_update else None,
        )

    needs_update = set_deployment_revision(
        deployment, str(annotations_of(rs_copy).get(REVISION_ANNOTATION, ""))
    )
    deployment_status = deployment.setdefault("status", {})
    if has_progress_deadline(deployment) and get_condition(deployment_status, PROGRESSING) is None:
        message = f'Found new replica set "{name_of(rs_copy)}"'
        set_condition(
            deployment_status,
            new_condition(PROGRESSING, "True", FOUND_NEW_RS_REASON, message, ctx.now()),
        )
        needs_update = True
    if needs_update:
        await update_deployment_status(ctx, deployment)
    return rs_copy


def _with_own_annotations(replica_set: Object) -> Object:
    """A copy of ``replica_set`` whose metadata and annotations - all that
    :func:`set_new_replica_set_annotations` changes - are its own; the rest is shared. Two
    whole copies of the new ReplicaSet were a quarter of a Deployment sync that changes
    nothing (tests/controllers/deployment: 96 -> 72 us)."""
    metadata = dict(meta(replica_set))
    metadata["annotations"] = dict(annotations_of(replica_set))
    return {**replica_set, "metadata": metadata}


def replica_set_name(deployment_name: str, pod_template_hash: str) -> str:
    """``<deployment>-<hash>``, the Deployment's name cut short so that the whole stays
    within the 253 characters of an object name (upstream ``generateReplicaSetName``).

    A cut that ends on a ``.`` drops it too: ``a.-hash`` would not be a valid name (a DNS
    label may not start with ``-``); every other cut is a prefix of a valid name.
    """
    room = _MAX_NAME_LENGTH - len(pod_template_hash) - 1
    if len(deployment_name) > room:
        deployment_name = deployment_name[:room].removesuffix(".")
    return f"{deployment_name}-{pod_template_hash}"


def _new_replica_set(deployment: Mapping[str, Any]) -> Object:
    """The ReplicaSet a Deployment's template calls for, named and labelled by its hash."""
    template: dict[str, Any] = deep_copy(dict(template_of(deployment)))
    collision_count = status(deployment).get("collisionCount")
    pod_template_hash = compute_hash(
        template, None if collision_count is None else int(collision_count)
    )
    template_meta = template.setdefault("metadata", {})
    template_meta["labels"] = clone_and_add_label(
        template_meta.get("labels"), DEFAULT_UNIQUE_LABEL_KEY, pod_template_hash
    )
    api_version, kind = CONTROLLER_KIND
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replica_set_name(name_of(deployment), pod_template_hash),
            "namespace": namespace_of(deployment),
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": kind,
                    "name": name_of(deployment),
                    "uid": uid_of(deployment),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "labels": dict(template_meta["labels"]),
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": int(spec(deployment).get("minReadySeconds") or 0),
            "selector": clone_selector_and_add_label(
                spec(deployment).get("selector"), DEFAULT_UNIQUE_LABEL_KEY, pod_template_hash
            ),
            "template": template,
        },
    }


async def _create_new_replica_set(
    ctx: SyncContext,
    deployment: MutableMapping[str, Any],
    old_replica_sets: Sequence[Object],
    new_revision: str,
) -> Object:
    new_rs = _new_replica_set(deployment)
    new_replicas = new_rs_new_replicas(deployment, [*old_replica_sets, new_rs], new_rs)
    new_rs["spec"]["replicas"] = new_replicas
    set_new_replica_set_annotations(
        deployment, new_rs, new_revision, False, MAX_REV_HISTORY_LENGTH_IN_CHARS
    )
    name = name_of(new_rs)
    deployment_status = deployment.setdefault("status", {})
    already_exists = False
    try:
        created = await ctx.client.create(REPLICASETS, new_rs, namespace=namespace_of(deployment))
    except AlreadyExists:
        # A slow cache, or a hash collision: only ours with an equal template is the new one.
        existing = ctx.rs_lister.get(namespace_of(deployment), name)
        if not (
            is_controlled_by(existing, deployment)
            and equal_ignore_hash(template_of(deployment), template_of(existing))
        ):
            await _bump_collision_count(ctx, deployment)
            raise
        created, already_exists = existing, True
    except ApiError as error:
        if has_status_cause(error, NAMESPACE_TERMINATING_CAUSE):
            raise
        message = f'Failed to create new replica set "{name}": {error_message(error)}'
        if has_progress_deadline(deployment):
            set_condition(
                deployment_status,
                new_condition(PROGRESSING, "False", FAILED_RS_CREATE_REASON, message, ctx.now()),
            )
            try:
                await update_deployment_status(ctx, deployment)
            except ApiError as status_error:  # the create failure is the news
                _log.debug(
                    "could not record the condition",
                    reason=FAILED_RS_CREATE_REASON,
                    error=str(status_error),
                )
        ctx.recorder.event(deployment, EVENT_TYPE_WARNING, FAILED_RS_CREATE_REASON, message)
        raise

    if not already_exists and new_replicas > 0:
        ctx.recorder.eventf(
            deployment,
            EVENT_TYPE_NORMAL,
            "ScalingReplicaSet",
            "Scaled up replica set %s from 0 to %d",
            name_of(created),
            new_replicas,
        )
    needs_update = set_deployment_revision(deployment, new_revision)
    if not already_exists and has_progress_deadline(deployment):
        message = f'Created new replica set "{name_of(created)}"'
        set_condition(
            deployment_status,
            new_condition(PROGRESSING, "True", NEW_REPLICA_SET_REASON, message, ctx.now()),
        )
        needs_update = True
    if needs_update:
        await update_deployment_status(ctx, deployment)
    return created


async def _bump_collision_count(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> None:
    """Count a hash collision in the Deployment's status so the next sync hashes anew."""
    deployment_status = deployment.setdefault("status", {})
    before = int(deployment_status.get("collisionCount") or 0)
    deployment_status["collisionCount"] = before + 1
    try:
        await update_deployment_status(ctx, deployment)
    except ApiError as error:  # the next sync finds the collision again
        _log.debug(
            "could not record the hash collision", deployment=name_of(deployment), error=str(error)
        )
        return
    _log.info(
        "found a hash collision for deployment - bumped collisionCount to resolve it",
        deployment=f"{namespace_of(deployment)}/{name_of(deployment)}",
        previous=before,
        collision_count=before + 1,
    )


def has_revision_history_limit(deployment: Mapping[str, Any]) -> bool:
    """Whether old ReplicaSets are cleaned up: ``revisionHistoryLimit`` set, not MaxInt32."""
    limit = spec(deployment).get("revisionHistoryLimit")
    return limit is not None and int(limit) != _INT32_MAX


async def cleanup_deployment(
    ctx: SyncContext, old_replica_sets: Sequence[Object], deployment: Mapping[str, Any]
) -> None:
    """Delete the old ReplicaSets beyond ``revisionHistoryLimit``, lowest revision first.

    ReplicaSets being deleted do not count; those with replicas (spec or status), an
    unobserved generation or a deletion timestamp are skipped. The first failed delete
    (other than NotFound) stops the clean-up and propagates.
    """
    if not has_revision_history_limit(deployment):
        return
    cleanable = [rs for rs in old_replica_sets if deletion_timestamp(rs) is None]
    diff = len(cleanable) - int(spec(deployment).get("revisionHistoryLimit") or 0)
    if diff <= 0:
        return
    for rs in sorted_by_revision(cleanable)[:diff]:
        if (
            status_int(rs, "replicas") != 0
            or spec_replicas(rs) != 0
            or generation(rs) > status_int(rs, "observedGeneration")
            or deletion_timestamp(rs) is not None
        ):
            continue
        _log.debug(
            "deleting old replica set", replicaset=name_of(rs), deployment=name_of(deployment)
        )
        with contextlib.suppress(NotFound):
            await delete_replica_set(ctx, rs)


async def is_scaling_event(
    ctx: SyncContext, deployment: MutableMapping[str, Any], rs_list: Sequence[Object]
) -> bool:
    """Whether ``spec.replicas`` changed since the active ReplicaSets were last sized: one of
    them records another desired size in its ``desired-replicas`` annotation."""
    new_rs, old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, False)
    replicas = spec_replicas(deployment)
    for rs in active_replica_sets([*old, new_rs]):
        desired = get_desired_replicas_annotation(rs)
        if desired is not None and desired != replicas:
            return True
    return False
