"""Controller references: which controller owns an object, and claiming objects by selector.

A controller selects its objects by labels, but labels overlap: two ReplicaSets may both match
a pod. The ``ownerReferences`` entry with ``controller: true`` settles it: an object has at most
one controller, and every controller only manages objects whose controller reference names its
UID. :class:`ControllerRefManager` reconciles the two views on each sync, as kubernetes'
``pkg/controller/controller_ref_manager.go`` does:

- owned by another controller (a different UID) -> left alone;
- owned by us and still matching the selector -> kept;
- owned by us but no longer matching -> released (unless we are being deleted);
- an orphan that matches -> adopted, unless we or the object are being deleted or it lives in
  another namespace. Before the first adoption of a pass ``can_adopt`` runs once (normally a
  live GET proving the controller still exists with the same UID and is not being deleted,
  see :func:`recheck_deletion_timestamp`), because the cached controller may be stale.

Adoption and release are strategic-merge patches of ``metadata.ownerReferences`` that carry the
object's ``metadata.uid`` as a precondition, so a recreated object of the same name is never
touched. The API server itself refuses a second controller reference, so two controllers racing
for one orphan end with exactly one owner; the loser sees an error and retries on its next sync.

A manager given ``finalizers`` (upstream's ``PodControllerRefManager`` with finalizers: the Job
controller claims pods with its tracking finalizer) adds them in the adoption patch and removes
them in the release patch, so an object never gains the owner without the finalizers or loses
the owner but keeps them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from kcontrol.client import Object, PatchType, Reader, Resource, Writer
from kcontrol.errors import CannotAdopt, ClaimError, Invalid, NotFound
from kcontrol.labels import Selector
from kcontrol.logging import get_logger

__all__ = [
    "CanAdopt",
    "CannotAdopt",
    "ClaimError",
    "ControllerRefManager",
    "get_controller_of",
    "recheck_deletion_timestamp",
    "recheck_owner",
    "resolve_controller_ref",
]

_log = get_logger(__name__)

CanAdopt = Callable[[], Awaitable[None]]
"""The pre-adoption check: returns when adoption may go ahead, raises to refuse it."""


def get_controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``ownerReferences`` entry with ``controller: true``, or ``None`` for an orphan."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") is True:
            return dict(ref)
    return None


class _Getter(Protocol):
    """A cache that gets by namespace and name (a :class:`~kcontrol.informers.Lister`)."""

    def get(self, namespace: str, name: str) -> Object: ...


def resolve_controller_ref(
    lister: _Getter, namespace: str, controller_ref: Mapping[str, Any], kind: str
) -> Object | None:
    """The cached ``kind`` object a controller reference (from :func:`get_controller_of`)
    names in ``namespace``, or ``None``: a reference to another kind, to an object not in
    the cache, or to one that was re-created under the same name (another UID). Upstream's
    per-controller ``resolveControllerRef``."""
    if controller_ref.get("kind") != kind:
        return None
    try:
        owner = lister.get(namespace, str(controller_ref.get("name")))
    except NotFound:
        return None
    if (owner.get("metadata") or {}).get("uid") != controller_ref.get("uid"):
        return None
    return owner


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _being_deleted(obj: Mapping[str, Any]) -> bool:
    return _meta(obj).get("deletionTimestamp") is not None


def _describe(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    namespace = meta.get("namespace")
    name = f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))
    return f"{name} ({meta.get('uid')})"


def recheck_deletion_timestamp(get_fresh: Callable[[], Awaitable[Mapping[str, Any]]]) -> CanAdopt:
    """A ``can_adopt`` check that reads the controller afresh and refuses if it is being deleted.

    ``get_fresh`` returns the live controller object (normally a GET, not the cache) and raises
    if it is gone or is not the same object any more (compare UIDs; :func:`recheck_owner` does
    both). Any failure of ``get_fresh`` is reported as :class:`CannotAdopt`.
    """

    async def can_adopt() -> None:
        try:
            fresh = await get_fresh()
        except Exception as error:
            raise CannotAdopt(f"can't recheck DeletionTimestamp: {error}") from error
        if _being_deleted(fresh):
            meta = _meta(fresh)
            raise CannotAdopt(
                f"{meta.get('namespace')}/{meta.get('name')} has just been deleted at "
                f"{meta.get('deletionTimestamp')}"
            )

    return can_adopt


def recheck_owner(reader: Reader, resource: Resource, controller: Mapping[str, Any]) -> CanAdopt:
    """The usual ``can_adopt``: a live GET of ``controller`` (a ``resource``) that refuses
    adoption when it is gone, was recreated under a new UID, or is being deleted."""
    meta = _meta(controller)
    name: str = meta["name"]
    namespace: str | None = meta.get("namespace")
    uid = meta.get("uid")

    async def get_fresh() -> Mapping[str, Any]:
        fresh = await reader.get(resource, name, namespace=namespace)
        fresh_uid = _meta(fresh).get("uid")
        if fresh_uid != uid:
            raise CannotAdopt(
                f"original {resource.kind} {namespace}/{name} is gone: got uid {fresh_uid}, "
                f"wanted {uid}"
            )
        return fresh

    return recheck_deletion_timestamp(get_fresh)


class ControllerRefManager:
    """Claims objects for one controller in one sync pass; see the module docstring.

    ``client`` sends the patches; ``controller`` is the owner object as cached (it is only read);
    ``selector`` matches the objects' labels; ``controller_kind`` is the owner's
    ``(apiVersion, kind)``, written into the references; ``resource`` is the resource of the
    claimed objects (e.g. :data:`~kcontrol.client.PODS`); ``can_adopt`` is the pre-adoption
    check, run at most once per :meth:`claim` and only if something is to be adopted (``None``
    skips the check - upstream allows it, but controllers should pass :func:`recheck_owner`);
    ``finalizers`` are added to each adopted object and removed from each released one, in the
    same patch as the reference.

    Create a manager per sync: the controller object it holds is a snapshot.
    """

    __slots__ = (
        "_can_adopt",
        "_can_adopt_error",
        "_can_adopt_ran",
        "_client",
        "_controller",
        "_finalizers",
        "_kind",
        "_resource",
        "_selector",
    )

    def __init__(
        self,
        client: Writer,
        controller: Mapping[str, Any],
        selector: Selector,
        controller_kind: tuple[str, str],
        resource: Resource,
        *,
        can_adopt: CanAdopt | None = None,
        finalizers: Sequence[str] = (),
    ) -> None:
        self._client = client
        self._controller = controller
        self._selector = selector
        self._kind = controller_kind
        self._resource = resource
        self._can_adopt = can_adopt
        self._finalizers = list(finalizers)
        # The outcome of can_adopt within the current claim pass: it runs at most once.
        self._can_adopt_ran = False
        self._can_adopt_error: Exception | None = None

    @property
    def _uid(self) -> str | None:
        uid: str | None = _meta(self._controller).get("uid")
        return uid

    def _matches(self, obj: Mapping[str, Any]) -> bool:
        return self._selector.matches(_meta(obj).get("labels") or {})

    async def claim(self, objects: Sequence[Mapping[str, Any]]) -> list[Object]:
        """Adopt matching orphans, release owned objects that stopped matching, and return the
        objects this controller owns afterwards.

        Kept objects are returned as given (never mutated), adopted ones as the patch returned
        them. An object that vanished (NotFound) during adoption or release is simply not owned.
        If any adoption or release failed, the rest are still processed and then a
        :class:`ClaimError` holding every failure is raised.
        """
        self._can_adopt_ran = False
        self._can_adopt_error = None
        claimed: list[Object] = []
        errors: list[Exception] = []
        for obj in objects:
            try:
                owned = await self._claim_one(obj)
            except Exception as error:
                errors.append(error)
                continue
            if owned is not None:
                claimed.append(owned)
        if errors:
            raise ClaimError(errors, claimed)
        return claimed

    async def _claim_one(self, obj: Mapping[str, Any]) -> Object | None:
        """The object if we own it after this step, else ``None``; raises what failed."""
        controller_ref = get_controller_of(obj)
        if controller_ref is not None:
            if controller_ref.get("uid") != self._uid:
                return None  # someone else's
            if self._matches(obj):
                # Ours and still selected. Allowed even while we are being deleted: it takes
                # no action.
                return obj if isinstance(obj, dict) else dict(obj)
            if _being_deleted(self._controller):
                return None
            await self.release(obj)
            return None

        # An orphan.
        if _being_deleted(self._controller) or not self._matches(obj):
            return None
        if _being_deleted(obj):
            return None
        own_namespace = _meta(self._controller).get("namespace")
        if own_namespace and own_namespace != _meta(obj).get("namespace"):
            return None
        try:
            return await self.adopt(obj)
        except NotFound:
            return None

    async def _check_can_adopt(self, obj: Mapping[str, Any]) -> None:
        if self._can_adopt is None:
            return
        if not self._can_adopt_ran:
            self._can_adopt_ran = True
            try:
                await self._can_adopt()
            except CannotAdopt as error:
                self._can_adopt_error = error
            except Exception as error:
                self._can_adopt_error = CannotAdopt(str(error))
                self._can_adopt_error.__cause__ = error
        if self._can_adopt_error is not None:
            raise CannotAdopt(
                f"can't adopt {self._resource.kind} {_describe(obj)}: {self._can_adopt_error}"
            ) from self._can_adopt_error

    async def adopt(self, obj: Mapping[str, Any]) -> Object:
        """Make this controller the object's controller; returns the patched object.

        Runs the pre-adoption check first (once per claim pass). The API server rejects the
        patch if the object already has another controller, and the UID precondition fails it
        if the object was replaced. The manager's ``finalizers`` are added in the same patch.
        """
        await self._check_can_adopt(obj)
        meta = _meta(self._controller)
        api_version, kind = self._kind
        patch: dict[str, Any] = {
            "metadata": {
                "ownerReferences": [
                    {
                        "apiVersion": api_version,
                        "kind": kind,
                        "name": meta.get("name"),
                        "uid": meta.get("uid"),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "uid": _meta(obj).get("uid"),
            }
        }
        if self._finalizers:
            patch["metadata"]["finalizers"] = list(self._finalizers)
        return await self._patch(obj, patch)

    async def release(self, obj: Mapping[str, Any]) -> None:
        """Remove this controller's reference (and the manager's ``finalizers``) from the object.

        NotFound (the object is gone) and Invalid (no such reference any more, or the UID
        precondition failed because the object was replaced) mean there is nothing to release.
        """
        _log.info(
            "releasing an object from its controller",
            kind=self._resource.kind,
            object=_describe(obj),
            controller_kind=self._kind[1],
            controller=_meta(self._controller).get("name"),
        )
        patch: dict[str, Any] = {
            "metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": self._uid}],
                "uid": _meta(obj).get("uid"),
            }
        }
        if self._finalizers:
            patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = list(self._finalizers)
        with contextlib.suppress(NotFound, Invalid):
            await self._patch(obj, patch)

    async def _patch(self, obj: Mapping[str, Any], patch: Mapping[str, Any]) -> Object:
        meta = _meta(obj)
        return await self._client.patch(
            self._resource,
            meta["name"],
            patch,
            namespace=meta.get("namespace"),
            patch_type=PatchType.STRATEGIC,
        )
