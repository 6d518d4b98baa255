"""Rollback through the deprecated ``spec.rollbackTo`` (kept in an annotation by the API).

``deprecated.deployment.rollback.to: N`` asks for the template of revision ``N`` (``0``: the
previous revision). The controller copies that ReplicaSet's template (without its
``pod-template-hash`` label) and annotations into the Deployment, removes the request and
PUTs the Deployment; the next sync then finds that ReplicaSet as the new one and gives it a
new revision. The request is removed in every case, so a rollback never repeats.

``kubectl rollout undo`` does not use this: it patches the Deployment's template client-side,
and the ordinary sync recognises the old ReplicaSet by template equality.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final

from kcontrol.client import Object, deep_copy
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kcontrol.logging import get_logger

from ._annotations import (
    ROLLBACK_TO_ANNOTATION,
    mutable_annotations,
    rollback_to,
    set_deployment_annotations_to,
)
from ._fields import DEFAULT_UNIQUE_LABEL_KEY, name_of, template_of
from ._replicasets import equal_ignore_hash
from ._revisions import RevisionError, last_revision, revision
from ._sync import get_all_replica_sets_and_sync_revision
from ._writes import SyncContext, update_deployment

__all__ = [
    "ROLLBACK_DONE",
    "ROLLBACK_REVISION_NOT_FOUND",
    "ROLLBACK_TEMPLATE_UNCHANGED",
    "rollback",
]

ROLLBACK_REVISION_NOT_FOUND: Final = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED: Final = "DeploymentRollbackTemplateUnchanged"
ROLLBACK_DONE: Final = "DeploymentRollback"

_log = get_logger(__name__)


async def rollback(
    ctx: SyncContext, deployment: MutableMapping[str, Any], rs_list: Sequence[Object]
) -> None:
    """Roll the Deployment back to the requested revision (see the module docstring)."""
    new_rs, all_old = await get_all_replica_sets_and_sync_revision(ctx, deployment, rs_list, True)
    all_rss = [*all_old, new_rs]
    target = rollback_to(deployment) or 0
    if target == 0:
        target = last_revision(all_rss)
        if target == 0:
            _warn(ctx, deployment, ROLLBACK_REVISION_NOT_FOUND, "Unable to find last revision.")
            await _update_deployment_and_clear_rollback_to(ctx, deployment)
            return
    for rs in all_rss:
        if rs is None:
            continue
        try:
            rs_revision = revision(rs)
        except RevisionError:
            continue
        if rs_revision == target:
            if await _rollback_to_template(ctx, deployment, rs):
                ctx.recorder.event(
                    deployment,
                    EVENT_TYPE_NORMAL,
                    ROLLBACK_DONE,
                    f'Rolled back deployment "{name_of(deployment)}" to revision {target}',
                )
            return
    _warn(
        ctx,
        deployment,
        ROLLBACK_REVISION_NOT_FOUND,
        "Unable to find the revision to rollback to.",
    )
    await _update_deployment_and_clear_rollback_to(ctx, deployment)


async def _rollback_to_template(
    ctx: SyncContext, deployment: MutableMapping[str, Any], replica_set: Mapping[str, Any]
) -> bool:
    """Give the Deployment the ReplicaSet's template and annotations unless its template is
    already the same (a warning event then), and clear the request. True if rolled back."""
    performed = False
    if not equal_ignore_hash(template_of(deployment), template_of(replica_set)):
        _log.debug("rolling back to an old template", deployment=name_of(deployment))
        _set_from_replica_set_template(deployment, template_of(replica_set))
        # The annotations go back too, or the new ReplicaSet would get the current ones.
        set_deployment_annotations_to(deployment, replica_set)
        performed = True
    else:
        _warn(
            ctx,
            deployment,
            ROLLBACK_TEMPLATE_UNCHANGED,
            "The rollback revision contains the same template as current deployment "
            f'"{name_of(deployment)}"',
        )
    await _update_deployment_and_clear_rollback_to(ctx, deployment)
    return performed


def _set_from_replica_set_template(
    deployment: MutableMapping[str, Any], template: Mapping[str, Any]
) -> None:
    new_template: dict[str, Any] = {
        "metadata": dict(template.get("metadata") or {}),
        "spec": template.get("spec"),
    }
    labels = new_template["metadata"].get("labels")
    if isinstance(labels, Mapping):
        new_template["metadata"]["labels"] = {
            k: v for k, v in labels.items() if k != DEFAULT_UNIQUE_LABEL_KEY
        }
    deployment.setdefault("spec", {})["template"] = deep_copy(new_template)


def _warn(ctx: SyncContext, deployment: Mapping[str, Any], reason: str, message: str) -> None:
    ctx.recorder.event(deployment, EVENT_TYPE_WARNING, reason, message)


async def _update_deployment_and_clear_rollback_to(
    ctx: SyncContext, deployment: MutableMapping[str, Any]
) -> None:
    mutable_annotations(deployment).pop(ROLLBACK_TO_ANNOTATION, None)
    await update_deployment(ctx, deployment)
