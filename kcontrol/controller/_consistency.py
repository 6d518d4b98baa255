"""Read your own writes: holding a sync back until the informers have seen the controller's
own writes.

A port of ``pkg/controller/util/consistency`` as Kubernetes 1.36's ReplicaSet, Job,
StatefulSet and DaemonSet controllers use it (the ``StaleControllerConsistency*`` features,
beta and on by default), and kcontrol's one answer to "has my cache seen my own last write?":
every controller of the project uses it, and so does the operator layer
(:mod:`kcontrol.builder`), for every reconcile.

Expectations count *how many* objects are still to be observed; this store remembers *which
resourceVersion* a controller last wrote on behalf of a key (an owner: the pods it created or
adopted, the owner's own status), per resource. A sync of that key proceeds only once every
informer involved has applied a resourceVersion at least as new; otherwise
:meth:`ConsistencyStore.ensure_ready` raises :class:`~kcontrol.errors.StaleCache`, and the
runner syncs the key again with backoff (:class:`~kcontrol.controller.Controller`). A sync
that passes clears the key's record. So no sync acts - nor writes, with a precondition bound
to fail - on a cache that has not caught up with the controller's own last write.

ResourceVersions are compared as upstream's ``CompareResourceVersion`` does: as positive
decimal integers without leading zeros. A version that is not of that form, or an informer
that has not applied anything yet, never holds a sync back.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import Object, Resource, observe_writes
from kcontrol.errors import StaleCache
from kcontrol.informers import SharedIndexInformer, meta_namespace_key_func

__all__ = [
    "ConsistencyStore",
    "LastSyncResourceVersion",
    "compare_resource_versions",
]

LastSyncResourceVersion = Callable[[], str]
"""The resourceVersion of the newest state an informer applied to its cache ("" if none);
``SharedIndexInformer.last_sync_resource_version``. The informer itself may be given
instead: an informer of several namespaces is then asked about the namespace of each write
(:meth:`~kcontrol.informers.SharedIndexInformer.last_sync_resource_version_in`), so a quiet
namespace never holds back a sync whose writes were elsewhere."""


def _well_formed(version: str) -> bool:
    return bool(version) and version[0] != "0" and version.isascii() and version.isdigit()


def compare_resource_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, equal to or newer than ``b``. Raises
    :class:`ValueError` unless both are positive decimal integers without leading zeros."""
    for version in (a, b):
        if not _well_formed(version):
            raise ValueError(f"resource version is not well formed: {version}")
    if len(a) != len(b):
        return -1 if len(a) < len(b) else 1
    return (a > b) - (a < b)


@dataclass(slots=True)
class _OwnerRecord:
    uid: str
    # (Resource, namespace of the object written) -> the newest resourceVersion written.
    versions: dict[tuple[Resource, str], str] = field(default_factory=dict)
    # A sync of the owner ended early because a cache was behind these writes: the
    # informers' events for them are what will sync it again.
    held_back: bool = False

    def wrote_at(self, resource: Resource, namespace: str, version: str) -> None:
        key = (resource, namespace)
        current = self.versions.get(key)
        if current is not None:
            try:
                if compare_resource_versions(current, version) >= 0:
                    return
            except ValueError:
                pass  # unparseable: the newest write wins, as upstream
        self.versions[key] = version


_ObjectKey = tuple[Resource, str]
"""A written object: its resource and ``namespace/name``."""

_this_sync: contextvars.ContextVar[tuple[ConsistencyStore, str, dict[_ObjectKey, str]] | None] = (
    contextvars.ContextVar("kcontrol_consistency_recording", default=None)
)

_VOLATILE_METADATA = frozenset({"resourceVersion", "managedFields"})
"""What every write changes: not a change of its own."""


def _only_status_differs(old: Mapping[str, Any], cur: Mapping[str, Any]) -> bool:
    for key in old.keys() | cur.keys():
        if key == "status":
            continue
        if key != "metadata":
            if old.get(key) != cur.get(key):
                return False
            continue
        old_meta, cur_meta = old.get(key) or {}, cur.get(key) or {}
        for name in old_meta.keys() | cur_meta.keys():
            if name not in _VOLATILE_METADATA and old_meta.get(name) != cur_meta.get(name):
                return False
    return True


class ConsistencyStore:
    """The newest resourceVersions written per owner key (``namespace/name``) and owner UID.

    ``informers`` maps each tracked resource to how far its informer has got
    (``informer.last_sync_resource_version``); writes of other resources are remembered but
    never hold a sync back. Feed it after each successful write (:meth:`wrote_at`, with the
    resourceVersion the server answered); ask it at the start of each sync
    (:meth:`ensure_ready`). Like the expectations, a store belongs to one event loop and is
    not thread-safe.
    """

    __slots__ = ("_informers", "_records")

    def __init__(
        self, informers: Mapping[Resource, LastSyncResourceVersion | SharedIndexInformer]
    ) -> None:
        self._informers = dict(informers)
        self._records: dict[str, _OwnerRecord] = {}

    def wrote_at(
        self, owner: str, owner_uid: str, resource: Resource, version: str, namespace: str = ""
    ) -> None:
        """Remember that the controller of ``owner`` (with ``owner_uid``) wrote a
        ``resource`` object (in ``namespace``) at ``version``. A record for another UID (an
        owner deleted and re-created under the same name) is replaced."""
        if not version:
            return
        record = self._records.get(owner)
        if record is None or record.uid != owner_uid:
            record = self._records[owner] = _OwnerRecord(owner_uid)
        record.wrote_at(resource, namespace, version)

    def wrote_owned(
        self, resource: Resource, obj: Mapping[str, Any], controller_ref: Mapping[str, Any] | None
    ) -> None:
        """:meth:`wrote_at` for a ``resource`` object the controller wrote (``obj``, as the
        server answered) on behalf of the owner ``controller_ref`` names in the object's
        namespace; nothing without an owner."""
        if controller_ref is None:
            return
        meta = obj.get("metadata") or {}
        owner = f"{meta.get('namespace')}/{controller_ref.get('name')}"
        version = str(meta.get("resourceVersion") or "")
        namespace = str(meta.get("namespace") or "")
        self.wrote_at(owner, str(controller_ref.get("uid")), resource, version, namespace)

    @contextlib.contextmanager
    def recording(self, owner: str, owner_uid: str = "") -> Iterator[None]:
        """Record every write of a tracked resource made in this block - by any client, in
        this task or the tasks it starts (:func:`~kcontrol.client.observe_writes`) - as
        written for ``owner``: what a sync does not have to report write by write.
        ``owner_uid`` may be left empty when the owner's UID is not known."""

        written: dict[_ObjectKey, str] = {}

        def observe(resource: Resource, answer: Object) -> None:
            if resource in self._informers:
                meta = answer.get("metadata") or {}
                version = str(meta.get("resourceVersion") or "")
                namespace = str(meta.get("namespace") or "")
                self.wrote_at(owner, owner_uid, resource, version, namespace)
                written[(resource, meta_namespace_key_func(answer))] = version

        token = _this_sync.set((self, owner, written))
        try:
            with observe_writes(observe):
                yield
        finally:
            _this_sync.reset(token)

    def ensure_current(self, resource: Resource, obj: Mapping[str, Any]) -> None:
        """Raise :class:`~kcontrol.errors.StaleCache` when ``obj`` (a copy a write is about
        to be based on) is older than this block's own earlier write of the same object
        (:meth:`recording`): a sync that already changed an object and goes on deciding from
        the cached copy of it. Nothing outside a recording, or for an object it did not
        write."""
        current = _this_sync.get()
        if current is None or current[0] is not self:
            return
        _, owner, written = current
        wrote = written.get((resource, meta_namespace_key_func(obj)))
        read = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if wrote is None or not read:
            return
        try:
            behind = compare_resource_versions(wrote, read) > 0
        except ValueError:
            return  # a data problem must not block syncing
        if behind:
            self._hold_back(owner)
            raise StaleCache(resource, read, wrote)

    def is_own_status_write(
        self, owner: str, resource: Resource, old: Mapping[str, Any], cur: Mapping[str, Any]
    ) -> bool:
        """True when the informer's update ``old`` -> ``cur`` of a ``resource`` object is
        the controller's own newest write for ``owner`` coming back - ``cur`` carries the
        resourceVersion recorded last for that resource and namespace - that write changed
        nothing but the object's ``status``, and no sync of ``owner`` has been held back
        since (:meth:`ensure_ready`, :meth:`ensure_current`).

        The sync that made such a write acted on everything it knew, and the event brings
        nothing else, so it need not queue ``owner`` again: a handler that drops it spares a
        sync that would find nothing to do. Any other event - another writer's, a spec or
        metadata change (one a relist folds into the same event too), one a held-back sync
        waits for, a periodic resync (same resourceVersion) - returns False."""
        record = self._records.get(owner)
        if record is None or record.held_back:
            return False
        meta = cur.get("metadata") or {}
        version = meta.get("resourceVersion")
        if not version or version == (old.get("metadata") or {}).get("resourceVersion"):
            return False  # a periodic resync is never the write coming back
        versions = record.versions
        if version != versions.get((resource, str(meta.get("namespace") or ""))) and (
            version != versions.get((resource, ""))  # recorded without its namespace
        ):
            return False
        return _only_status_differs(old, cur)

    def _hold_back(self, owner: str) -> None:
        record = self._records.get(owner)
        if record is not None:
            record.held_back = True

    def pending(self, owner: str) -> dict[Resource, str]:
        """The newest versions written for ``owner`` that no sync has confirmed yet."""
        record = self._records.get(owner)
        newest: dict[Resource, str] = {}
        for (resource, _), version in (record.versions if record is not None else {}).items():
            current = newest.get(resource)
            try:
                if current is None or compare_resource_versions(version, current) > 0:
                    newest[resource] = version
            except ValueError:
                newest[resource] = version
        return newest

    def clear(self, owner: str, owner_uid: str | None = None) -> None:
        """Forget ``owner``'s record, if it belongs to ``owner_uid`` (any UID when ``None``)."""
        record = self._records.get(owner)
        if record is not None and (owner_uid is None or record.uid == owner_uid):
            del self._records[owner]

    def ensure_ready(self, owner: str) -> None:
        """Return if every informer has applied the versions written for ``owner`` (and then
        forget them); raise :class:`StaleCache` for the first one that has not."""
        record = self._records.get(owner)
        if record is None:
            return
        for (resource, namespace), wrote in record.versions.items():
            last_sync = self._informers.get(resource)
            if last_sync is None:
                continue
            if isinstance(last_sync, SharedIndexInformer):
                read = (
                    last_sync.last_sync_resource_version_in(namespace)
                    if namespace and len(last_sync.namespaces) > 1
                    else last_sync.last_sync_resource_version
                )
            else:
                read = last_sync()
            if not read:
                continue
            try:
                behind = compare_resource_versions(wrote, read) > 0
            except ValueError:
                continue  # a data problem must not block syncing
            if behind:
                record.held_back = True
                raise StaleCache(resource, read, wrote)
        self.clear(owner, record.uid)
