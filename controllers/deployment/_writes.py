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
- A Deployment or ReplicaSet write preconditioned on a resourceVersion this controller has
  already written over is not sent: the server would refuse it with 409 Conflict. That
  happens when a sync runs on a cache that has not yet seen the controller's own last write
  (of the Deployment, or of a ReplicaSet it scaled); the sync stops with
  :class:`CacheBehindOwnWrite` instead, and the informer's delivery of that write enqueues
  the Deployment again. (Upstream sends the write, gets the 409, and requeues with backoff.)
- The status a sync ends with (the rollout's progress, or the counts after a scale) is not
  written when the Deployment was queued again during the sync - a newer event arrived, and
  the sync that follows at once computes a newer status from it - unless the previous such
  write was already left out: a status that would be superseded is not written, and under a
  stream of events every other one still is. (Upstream writes each one.)
- A Deployment's spec (rollback) is PUT whole, with its resourceVersion.
- Old ReplicaSets are deleted with the UID and resourceVersion they were judged by as
  preconditions, so a ReplicaSet that was scaled up again meanwhile is not deleted.

Nothing here mutates a cached object: callers pass their own copies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kcontrol.client import DEPLOYMENTS, REPLICASETS, Client, Object, PatchType
from kcontrol.clock import Clock
from kcontrol.errors import KcontrolError
from kcontrol.events import EventRecorder
from kcontrol.informers import Lister

from ._fields import annotations_of, meta, name_of, namespace_of

__all__ = [
    "CacheBehindOwnWrite",
    "SpentVersions",
    "SyncContext",
    "delete_replica_set",
    "patch_replica_set",
    "update_deployment",
    "update_deployment_status",
    "write_final_status",
]


class CacheBehindOwnWrite(KcontrolError):
    """A write was not sent: the copy of the Deployment or ReplicaSet it was based on is
    older than this controller's own last write of that object, so the server would refuse
    it with 409 Conflict. Not an error of the sync: the informer has yet to deliver that
    write, and its event enqueues the Deployment again."""

    def __init__(self, key: str, version: str, kind: str = "deployment") -> None:
        self.key = key
        self.version = version
        self.kind = kind
        super().__init__(
            f"{kind} {key} at resourceVersion {version} is older than this "
            "controller's own last write of it"
        )


class SpentVersions:
    """Per object key (``namespace/name``), the resourceVersion its last successful write by
    this controller was preconditioned on: a version the server has already moved past, so
    another write preconditioned on it is certain to conflict. Belongs to one event loop."""

    __slots__ = ("_spent",)

    def __init__(self) -> None:
        self._spent: dict[str, str] = {}

    def is_spent(self, key: str, version: str) -> bool:
        """Whether a write of ``key`` preconditioned on ``version`` would conflict with
        this controller's own last write."""
        return bool(version) and self._spent.get(key) == version

    def spend(self, key: str, version: str) -> None:
        """Record that a write of ``key`` preconditioned on ``version`` changed the object
        (a write that changed nothing leaves ``version`` current)."""
        if version:
            self._spent[key] = version

    def forget(self, key: str) -> None:
        """Drop ``key`` (its object was deleted)."""
        self._spent.pop(key, None)


@dataclass(frozen=True, slots=True)
class SyncContext:
    """The collaborators of the sync steps: the API ``client``, the event ``recorder``
    (source ``deployment-controller``), the ReplicaSet lister (for re-reading a ReplicaSet
    after AlreadyExists), the ``clock`` whose wall time stamps conditions and measures
    progress deadlines, and the versions this controller's Deployment and ReplicaSet writes
    have spent."""

    client: Client
    recorder: EventRecorder
    rs_lister: Lister
    clock: Clock
    spent: SpentVersions = field(default_factory=SpentVersions)
    spent_replica_sets: SpentVersions = field(default_factory=SpentVersions)
    superseded: Callable[[str], bool] = field(default=lambda key: False)
    """Whether the Deployment of a key was queued again since its sync began."""
    deferred: set[str] = field(default_factory=set)
    """Keys whose last final status write was left to the next sync (:func:`write_final_status`)."""

    def now(self) -> datetime:
        """The wall-clock time conditions are stamped and deadlines measured with."""
        return self.clock.wall()


def _carry_resource_version(target: MutableMapping[str, Any], answer: Mapping[str, Any]) -> None:
    version = meta(answer).get("resourceVersion")
    if version:
        target.setdefault("metadata", {})["resourceVersion"] = version


def _check_not_spent(
    spent: SpentVersions, obj: Mapping[str, Any], kind: str = "deployment"
) -> tuple[str, str]:
    key = f"{namespace_of(obj)}/{name_of(obj)}"
    version = str(meta(obj).get("resourceVersion") or "")
    if spent.is_spent(key, version):
        raise CacheBehindOwnWrite(key, version, kind)
    return key, version


def _spend(spent: SpentVersions, key: str, version: str, answer: Mapping[str, Any]) -> None:
    # A write that changed nothing leaves the object (and its resourceVersion) as it was.
    if str(meta(answer).get("resourceVersion") or "") != version:
        spent.spend(key, version)


async def update_deployment_status(
    ctx: SyncContext, deployment: MutableMapping[str, Any]
) -> Object:
    """PUT ``deployment`` (the caller's copy) to its ``status`` subresource; the copy then
    carries the new resourceVersion. Conflict propagates; :class:`CacheBehindOwnWrite` is
    raised, and nothing sent, when the copy predates this controller's own last write."""
    key, version = _check_not_spent(ctx.spent, deployment)
    answer = await ctx.client.update_status(DEPLOYMENTS, deployment)
    _spend(ctx.spent, key, version, answer)
    _carry_resource_version(deployment, answer)
    return answer


async def write_final_status(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> None:
    """Write the status a sync ends with (``deployment`` is the caller's copy, holding it),
    unless the sync that follows at once supersedes it (module docstring); as
    :func:`update_deployment_status` otherwise."""
    key = f"{namespace_of(deployment)}/{name_of(deployment)}"
    if key not in ctx.deferred and ctx.superseded(key):
        ctx.deferred.add(key)
        return
    ctx.deferred.discard(key)
    await update_deployment_status(ctx, deployment)


async def update_deployment(ctx: SyncContext, deployment: MutableMapping[str, Any]) -> Object:
    """PUT ``deployment`` (the caller's copy); the copy then carries the new
    resourceVersion. Conflict and :class:`CacheBehindOwnWrite` propagate as for
    :func:`update_deployment_status`."""
    key, version = _check_not_spent(ctx.spent, deployment)
    answer = await ctx.client.update(DEPLOYMENTS, deployment)
    _spend(ctx.spent, key, version, answer)
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
    ReplicaSet's resourceVersion as a precondition; :class:`CacheBehindOwnWrite` is raised,
    and nothing sent, when that version predates this controller's own last write of the
    ReplicaSet. Conflict propagates."""
    rs_key, version = _check_not_spent(ctx.spent_replica_sets, replica_set, "replicaset")
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
    _spend(ctx.spent_replica_sets, rs_key, version, answer)
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
