"""Holding a sync back until the informers have seen the controller's own writes.

A port of ``pkg/controller/util/consistency`` as the ReplicaSet and Job controllers use it in
Kubernetes 1.36 (features ``StaleControllerConsistencyReplicaSet`` and
``StaleControllerConsistencyJob``, beta and on by default).
Expectations count *how many* pods are still to be observed; this store remembers *which
resourceVersion* the controller last wrote for an owner, per resource (the pods it created or
adopted, the ReplicaSet's status). A sync of that owner only proceeds once every informer
involved has applied a resourceVersion at least as new; otherwise it fails with
:class:`StaleCache`, and the key is retried with backoff. A sync that passes clears the
owner's record.

ResourceVersions are compared as upstream's ``CompareResourceVersion`` does: as positive
decimal integers without leading zeros. A version that is not of that form, or an informer
that has not applied anything yet, never holds a sync back.

Like the expectations, a store belongs to one event loop and is not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kcontrol.client import PODS, Resource
from kcontrol.errors import KcontrolError

__all__ = [
    "ConsistencyStore",
    "LastSyncResourceVersion",
    "StaleCache",
    "compare_resource_versions",
]

LastSyncResourceVersion = Callable[[], str]
"""The resourceVersion of the newest state an informer applied to its cache ("" if none);
``SharedIndexInformer.last_sync_resource_version``."""


class StaleCache(KcontrolError):
    """An informer has not yet seen a version this controller wrote; sync again later."""

    def __init__(self, resource: Resource, read: str, wrote: str) -> None:
        self.resource = resource
        self.read = read
        self.wrote = wrote
        super().__init__(
            f"read version: {read} is not as new as written version: {wrote} for group "
            f"resource {resource.plural}{'.' + resource.group if resource.group else ''}"
        )


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
    # Resource -> the newest resourceVersion written for this owner.
    versions: dict[Resource, str] = field(default_factory=dict)

    def wrote_at(self, resource: Resource, version: str) -> None:
        current = self.versions.get(resource)
        if current is not None:
            try:
                if compare_resource_versions(current, version) >= 0:
                    return
            except ValueError:
                pass  # unparseable: the newest write wins, as upstream
        self.versions[resource] = version


class ConsistencyStore:
    """The newest resourceVersions written per owner key (``namespace/name``) and owner UID.

    ``informers`` maps each tracked resource to how far its informer has got; writes of
    other resources are remembered but never hold a sync back.
    """

    __slots__ = ("_informers", "_records")

    def __init__(self, informers: Mapping[Resource, LastSyncResourceVersion]) -> None:
        self._informers = dict(informers)
        self._records: dict[str, _OwnerRecord] = {}

    def wrote_at(self, owner: str, owner_uid: str, resource: Resource, version: str) -> None:
        """Remember that the controller of ``owner`` (with ``owner_uid``) wrote a
        ``resource`` object at ``version``. A record for another UID (an owner deleted and
        re-created under the same name) is replaced."""
        if not version:
            return
        record = self._records.get(owner)
        if record is None or record.uid != owner_uid:
            record = self._records[owner] = _OwnerRecord(owner_uid)
        record.wrote_at(resource, version)

    def wrote_pod(self, pod: Mapping[str, Any], controller_ref: Mapping[str, Any] | None) -> None:
        """:meth:`wrote_at` for a pod the controller created or patched, its owner being the
        one ``controller_ref`` names in the pod's namespace (nothing without one): the
        ``on_write`` of :class:`~kcontrol_controllers.podcontrol.PodControl`."""
        if controller_ref is None:
            return
        meta = pod.get("metadata") or {}
        owner = f"{meta.get('namespace')}/{controller_ref.get('name')}"
        version = str(meta.get("resourceVersion") or "")
        self.wrote_at(owner, str(controller_ref.get("uid")), PODS, version)

    def pending(self, owner: str) -> dict[Resource, str]:
        """The newest versions written for ``owner`` that no sync has confirmed yet."""
        record = self._records.get(owner)
        return dict(record.versions) if record is not None else {}

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
        for resource, wrote in record.versions.items():
            last_sync = self._informers.get(resource)
            if last_sync is None:
                continue
            read = last_sync()
            if not read:
                continue
            try:
                behind = compare_resource_versions(wrote, read) > 0
            except ValueError:
                continue  # a data problem must not block syncing
            if behind:
                raise StaleCache(resource, read, wrote)
        self.clear(owner, record.uid)
