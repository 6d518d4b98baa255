"""Reading and writing a parent's ControllerRevisions: upstream's ``history.Interface``.

:class:`History` is the port of ``realHistory``: it lists from the informer's cache and
writes through the API. Its contracts, as upstream's:

- listing returns the revisions in the parent's namespace that match the selector and are
  controlled by the parent or by nothing (orphans, for the caller to adopt); revisions
  controlled by another object are never returned. The objects are the cache's: read-only.
- creating retries under a new name while the name is taken by different data (each retry
  bumps the collision count, which the caller stores in the parent's
  ``status.collisionCount``); a name taken by the same data is the revision the caller
  wanted, and is returned as it is.
- updating only ever changes ``revision``, and retries on conflict from the cached copy.
- adopting and releasing are strategic-merge patches of ``ownerReferences`` carrying the
  revision's UID, so a revision deleted and re-created under the same name is never touched.

With an ``indexer`` carrying :data:`CONTROLLER_REVISION_CONTROLLER_INDEX` (Kubernetes 1.36's
index of ControllerRevisions by controller), listing reads the parent's and the orphans'
buckets instead of every revision of the namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kcontrol.client import CONTROLLERREVISIONS, Client, Object, PatchType, deep_copy
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import get_controller_of
from kcontrol.errors import AlreadyExists, AlreadyOwned, Invalid, NotFound
from kcontrol.informers import Indexer, LabelSelector, Lister
from kcontrol.retry import DEFAULT_BACKOFF, Backoff, retry_on_conflict

from ..podutil import new_controller_ref
from ._hashing import controller_revision_name, hash_controller_revision
from ._revisions import body_to_create, same_data

__all__ = [
    "CONTROLLER_REVISION_CONTROLLER_INDEX",
    "History",
    "controller_revision_index_func",
    "controller_revision_index_key",
]

CONTROLLER_REVISION_CONTROLLER_INDEX: Final = "controllerRevisionController"
"""Name of the ControllerRevision informer index by controller; its values are
:func:`controller_revision_index_key`."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def controller_revision_index_key(namespace: str, controller_uid: str | None) -> str:
    """The :data:`CONTROLLER_REVISION_CONTROLLER_INDEX` value of the revisions in
    ``namespace`` controlled by the object with ``controller_uid`` (``namespace/uid``), or
    of the orphans of ``namespace`` when it is ``None`` (the namespace alone)."""
    return namespace if controller_uid is None else f"{namespace}/{controller_uid}"


def controller_revision_index_func(revision: Object) -> list[str]:
    """The index function of :data:`CONTROLLER_REVISION_CONTROLLER_INDEX`: one value per
    revision, from its namespace and its controller's UID."""
    ref = get_controller_of(revision)
    namespace = str(_meta(revision).get("namespace") or "")
    return [controller_revision_index_key(namespace, None if ref is None else str(ref.get("uid")))]


class History:
    """The ControllerRevisions of StatefulSets or DaemonSets: cached reads, API writes.

    ``client`` writes revisions (and reads one back when a name is taken); ``lister`` reads
    the ControllerRevision informer's cache. ``indexer``, if given, is that informer's
    cache and must carry :data:`CONTROLLER_REVISION_CONTROLLER_INDEX` (add it with
    ``ensure_index(informer, CONTROLLER_REVISION_CONTROLLER_INDEX,
    controller_revision_index_func)`` from :mod:`kcontrol_controllers.podutil`). Updates
    retry on conflict with ``backoff`` (client-go's ``retry.DefaultBackoff``), pausing on
    ``clock``.

    Arguments are never mutated. Every method raises the client's
    :class:`~kcontrol.errors.ApiError` when a request fails, except where it says otherwise.
    """

    __slots__ = ("_backoff", "_client", "_clock", "_indexer", "_lister")

    def __init__(
        self,
        client: Client,
        lister: Lister,
        *,
        indexer: Indexer | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        clock: Clock | None = None,
    ) -> None:
        if indexer is not None and CONTROLLER_REVISION_CONTROLLER_INDEX not in (
            indexer.get_indexers()
        ):
            raise ValueError(
                f"the ControllerRevision indexer lacks the {CONTROLLER_REVISION_CONTROLLER_INDEX}"
                " index (see controller_revision_index_func)"
            )
        self._client = client
        self._lister = lister
        self._indexer = indexer
        self._backoff = backoff
        self._clock: Clock = clock if clock is not None else RealClock()

    async def list_controller_revisions(
        self, parent: Mapping[str, Any], selector: LabelSelector
    ) -> list[Object]:
        """The cached revisions in ``parent``'s namespace whose labels match ``selector``
        and that ``parent`` controls or nothing controls, in no particular order. They are
        shared with the cache: copy one before changing it."""
        meta = _meta(parent)
        namespace = str(meta.get("namespace") or "")
        uid = meta.get("uid")
        if self._indexer is None:
            return [
                revision
                for revision in self._lister.list(namespace, selector)
                if (ref := get_controller_of(revision)) is None or ref.get("uid") == uid
            ]
        candidates = self._indexer.by_index(
            CONTROLLER_REVISION_CONTROLLER_INDEX, controller_revision_index_key(namespace, None)
        )
        if uid:
            candidates += self._indexer.by_index(
                CONTROLLER_REVISION_CONTROLLER_INDEX,
                controller_revision_index_key(namespace, str(uid)),
            )
        return [r for r in candidates if selector.matches(_meta(r).get("labels") or {})]

    async def create_controller_revision(
        self, parent: Mapping[str, Any], revision: Mapping[str, Any], collision_count: int
    ) -> tuple[Object, int]:
        """Create ``revision`` in ``parent``'s namespace, named ``<parent name>-<hash>``
        (:func:`hash_controller_revision` with ``collision_count``); returns the revision and
        the collision count it was created with.

        When the name is taken (AlreadyExists), the revision holding it is read back: if its
        data equals ``revision``'s (compared as parsed JSON) and no other object controls
        it, it is returned as it is (the caller's own earlier write, not yet in its cache);
        otherwise ``collision_count`` is bumped and creation tried again under the new name.
        Only the name changes between attempts: the hash label keeps the value the revision
        was built with, as upstream.

        Upstream returns a revision with the same data whoever controls it; one controlled
        by another object (a deleted parent's, still being collected) is not reused here.
        """
        meta = _meta(parent)
        namespace = meta.get("namespace")
        prefix = str(meta.get("name") or "")
        clone: Object = deep_copy(dict(revision))
        clone["metadata"] = dict(_meta(clone))
        while True:
            name = controller_revision_name(
                prefix, hash_controller_revision(revision, collision_count)
            )
            clone["metadata"]["name"] = name
            try:
                created = await self._client.create(
                    CONTROLLERREVISIONS, body_to_create(clone), namespace=namespace
                )
            except AlreadyExists:
                existing = await self._client.get(CONTROLLERREVISIONS, name, namespace=namespace)
                owner = get_controller_of(existing)
                if same_data(existing, clone) and (
                    owner is None or owner.get("uid") == meta.get("uid")
                ):
                    return existing, collision_count
                collision_count += 1
                continue
            return created, collision_count

    async def update_controller_revision(
        self, revision: Mapping[str, Any], new_revision: int
    ) -> Object:
        """Set ``revision``'s ``revision`` to ``new_revision``; returns the updated object (a
        copy of ``revision`` when it already has that number: nothing is sent).

        A failed update refreshes the copy from the cache (or, when the cache lacks it,
        starts again from ``revision``); a Conflict is then retried with the backoff, any
        other error raised at once, as is the last Conflict when the attempts run out.
        """
        clone: Object = deep_copy(dict(revision))

        async def attempt() -> Object:
            nonlocal clone
            if clone.get("revision") == new_revision:
                return clone
            clone["revision"] = new_revision
            meta = _meta(clone)
            try:
                return await self._client.update(
                    CONTROLLERREVISIONS, clone, namespace=meta.get("namespace")
                )
            except Exception:
                clone = self._cached_copy(meta) or deep_copy(dict(revision))
                raise

        return await retry_on_conflict(self._backoff, attempt, clock=self._clock)

    def _cached_copy(self, meta: Mapping[str, Any]) -> Object | None:
        try:
            cached = self._lister.get(str(meta.get("namespace") or ""), str(meta.get("name")))
        except NotFound:
            return None
        return deep_copy(cached)

    async def delete_controller_revision(self, revision: Mapping[str, Any]) -> None:
        """Delete ``revision`` (NotFound when it is already gone)."""
        meta = _meta(revision)
        await self._client.delete(
            CONTROLLERREVISIONS, str(meta.get("name")), namespace=meta.get("namespace")
        )

    async def adopt_controller_revision(
        self, parent: Mapping[str, Any], parent_kind: tuple[str, str], revision: Mapping[str, Any]
    ) -> Object:
        """Make ``parent`` (of ``(apiVersion, kind)`` ``parent_kind``) the controller of the
        orphan ``revision``; returns the patched revision.

        Raises :class:`~kcontrol.errors.AlreadyOwned` without sending anything when
        ``revision`` already has a controller; the patch fails (Invalid) when the revision
        with that name is not the one given (another UID), and NotFound when it is gone.
        """
        owner = get_controller_of(revision)
        if owner is not None:
            raise AlreadyOwned(revision, owner)
        api_version, kind = parent_kind
        patch = {
            "metadata": {
                "ownerReferences": [new_controller_ref(parent, api_version, kind)],
                "uid": _meta(revision).get("uid"),
            }
        }
        return await self._client.patch(
            CONTROLLERREVISIONS,
            str(_meta(revision).get("name")),
            patch,
            namespace=_meta(parent).get("namespace"),
            patch_type=PatchType.STRATEGIC,
        )

    async def release_controller_revision(
        self, parent: Mapping[str, Any], revision: Mapping[str, Any]
    ) -> Object | None:
        """Remove ``parent``'s owner reference from ``revision``; returns the patched
        revision, or ``None`` when there was nothing to release: the revision is gone
        (NotFound) or the server refused the patch as Invalid (the reference is not there,
        or the revision with that name is another one)."""
        meta = _meta(revision)
        patch = {
            "metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": _meta(parent).get("uid")}],
                "uid": meta.get("uid"),
            }
        }
        try:
            return await self._client.patch(
                CONTROLLERREVISIONS,
                str(meta.get("name")),
                patch,
                namespace=meta.get("namespace"),
                patch_type=PatchType.STRATEGIC,
            )
        except (NotFound, Invalid):
            return None
