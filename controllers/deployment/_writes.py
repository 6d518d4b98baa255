"""Every write the controller sends, and what it needs to run a sync step.

Writes are the least they can be and never clobber other writers:

- A ReplicaSet is changed with a JSON merge patch holding only the fields the controller owns
  (``spec.replicas``, ``spec.minReadySeconds``, the annotations it sets) plus
  ``metadata.resourceVersion`` of the copy the decision was made from. Upstream PUTs the whole
  cached object; the patch is equivalent when the cache is current (the resourceVersion
  precondition makes the server refuse it with 409 otherwise, exactly as the PUT would be
  refused), and it cannot drop or overwrite a field this controller does not know - such as
  one added by a newer API server or a mutating webhook.
- A Deployment's status is PUT to the ``status`` subresource as the whole object read from
  the cache (deep-copied) with the new status, so its resourceVersion guards it. (The
  Deployment's status strategy also takes ``metadata.annotations`` from such a write, which is
  how the revision annotation reaches the Deployment, as upstream.) After a successful write
  the copy takes the resourceVersion the server answered, so a later write of the same sync
  is not refused for our own earlier one - upstream discards the answer and pays a 409 and a
  requeue instead.
- Every write a sync makes of the Deployment and of ReplicaSets (created, scaled, annotated,
  adopted) is recorded, with the resourceVersion the server answered, in the controller's
  :class:`~kcontrol.controller.ConsistencyStore` under the Deployment's key (the sync runs in
  :meth:`~kcontrol.controller.ConsistencyStore.recording`). The next sync of that Deployment
  does not run until the informers have seen those writes (``DeploymentController.sync``),
  and within a sync no write is based on a copy older than the sync's own earlier write of
  the same object (:meth:`~kcontrol.controller.ConsistencyStore.ensure_current`: the sync
  ends, and the informer's event for that write syncs again). So no write is sent
  preconditioned on a version the server has already moved past. (Upstream's Deployment
  controller sends such a write, gets 409 Conflict and requeues with backoff; its ReplicaSet
  and Job controllers hold the sync back as here.)
- The status a sync ends with (the rollout's progress, or the counts after a scale) is not
  written when the Deployment was queued again during the sync
  (:func:`kcontrol.controller.superseded`: a newer event arrived, and the sync that follows
  at once computes a newer status from it) - unless the previous such write was already
  left out: a status that would be superseded is not written, and under a stream of events
  every other one still is. (Upstream writes each one.)
- A Deployment's spec (rollback) is PUT whole, with its resourceVersion.
- Old ReplicaSets are deleted with the UID and resourceVersion they were judged by as
  preconditions, so a ReplicaSet that was scaled up again meanwhile is not deleted.

Nothing here mutates a cached object: callers pass their own copies.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kcontrol.client import DEPLOYMENTS, REPLICASETS, Client, Object, PatchType
from kcontrol.clock import Clock
from kcontrol.controller import ConsistencyStore, SupersededWrites, key_func
from kcontrol.events import EventRecorder
from kcontrol.informers import Lister

from ._fields import annotations_of, meta, name_of, namespace_of

__all__ = [
    "SyncContext",
    "delete_replica_set",
    "patch_replica_set",
    "update_deployment",
    "update_deployment_status",
    "write_final_status",
]


@dataclass(frozen=True, slots=True)
class SyncContext:
    """The collaborators of the sync steps: the API ``client``, the event ``recorder``
    (source ``deployment-controller``), the ReplicaSet lister (for re-reading a ReplicaSet
    after AlreadyExists), the ``clock`` whose wall time stamps conditions and measures
    progress deadlines, and the ``consistency`` store every write is recorded in (module
    docstring; by default one that tracks no informer, so it holds nothing back)."""

    client: Client
    recorder: EventRecorder
    rs_lister: Lister
    clock: Clock
    consistency: ConsistencyStore = field(default_factory=lambda: ConsistencyStore({}))
    deferred: SupersededWrites = field(default_factory=SupersededWrites)
    """Keys whose last final status write was left to the next sync (:func:`write_final_status`)."""

    def now(self) -> datetime:
        """The wall-clock time conditions are stamped and deadlines measured with."""
        return self.clock.wall()


def _carry_resource_version(target: MutableMapping[str, Any], answer: Mapping[str, Any]) -> None:
    version = meta(answer).get("resourceVersion")
    if version:
        target.setdefault("metadata", {})["resourceVersion"] = version


async def update_deployment_status(
    ctx: SyncContext, deployment: MutableMapping[str, Any]
) -> Object:
    """PUT ``deployment`` (the caller's copy) to its ``status`` subresource; the copy then
    carries the new resourceVersion. Conflict propagates; StaleCache when the copy is older
    than this sync's own earlier write of the Deployment (module docstring)."""
    ctx.consistency.ensure_current(DEPLOYMENTS, deployment)
    answer = await ctx.client.update_status(DEPLOYMENTS, deployment)
    _carry_resource_version(deployment, answer)
    return answer


async def write_final_status(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> None:
    """Write the status a sync ends with (``deployment`` is the caller's copy, holding it),
    unless the sync that follows at once supersedes it (module docstring); as
    :func:`update_deployment_status` otherwise."""
    if ctx.deferred.leave_out(key_func(deployment)):
        return
    await update_deployment_status(ctx, deployment)


async def update_deployment(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> Object:
    """PUT ``deployment`` (the caller's copy); the copy then carries the new
    resourceVersion. Conflict and StaleCache propagate as for
    :func:`update_deployment_status`."""
    ctx.consistency.ensure_current(DEPLOYMENTS, deployment)
    answer = await ctx.client.update(DEPLOYMENTS, deployment)
    _carry_resource_version(deployment, answer)
    return answer


async def patch_replica_set(
    ctx: SyncContext,
    replica_set: Mapping[str, Any],
    *,
    replicas: int | None = None,
    min_ready_seconds: int | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Object:
    """Merge-patch the given fields of ``replica_set`` (as read) and return the server's
    answer. ``annotations`` is the full wanted set: only keys whose value differs from
    ``replica_set``'s are sent (a key missing from it is removed). The patch carries the
    ReplicaSet's resourceVersion as a precondition. Conflict propagates; StaleCache when
    ``replica_set`` is older than this sync's own earlier write of it (module docstring)."""
    ctx.consistency.ensure_current(REPLICASETS, replica_set)
    metadata: dict[str, Any] = {"resourceVersion": meta(replica_set).get("resourceVersion")}
    body: dict[str, Any] = {"metadata": metadata}
    if annotations is not None:
        current = annotations_of(replica_set)
        changed: dict[str, str | None] = {
            key: value for key, value in annotations.items() if current.get(key) != value
        }
        changed.update({key: None for key in current if key not in annotations})
        if changed:
            metadata["annotations"] = changed
    spec: dict[str, Any] = {}
    if replicas is not None:
        spec["replicas"] = replicas
    if min_ready_seconds is not None:
        spec["minReadySeconds"] = min_ready_seconds
    if spec:
        body["spec"] = spec
    answer = await ctx.client.patch(
        REPLICASETS,
        name_of(replica_set),
        body,
        namespace=namespace_of(replica_set),
        patch_type=PatchType.MERGE,
    )
    return answer


async def delete_replica_set(ctx: SyncContext, replica_set: Mapping[str, Any]) -> None:
    """DELETE ``replica_set``, preconditioned on the UID and resourceVersion it was read
    with. NotFound is the caller's to handle."""
    preconditions = {"uid": str(meta(replica_set).get("uid") or "")}
    version = meta(replica_set).get("resourceVersion")
    if version:
        preconditions["resourceVersion"] = str(version)
    await ctx.client.delete(
        REPLICASETS,
        name_of(replica_set),
        namespace=namespace_of(replica_set),
        preconditions=preconditions,
    )
