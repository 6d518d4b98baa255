"""Cache keys, and the tombstone a relist leaves for an object whose deletion was missed.

Objects in kcontrol's caches are keyed ``namespace/name``, or just ``name`` for cluster-scoped
objects (client-go's ``MetaNamespaceKeyFunc``). The UID is not part of the key: an object that
is deleted and re-created under the same name while the informer is not watching shows up as
an update, not as a delete and an add.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kcontrol.client import Object
from kcontrol.logging import get_logger

__all__ = [
    "DeletedFinalStateUnknown",
    "KeyFunc",
    "deleted_object",
    "meta_namespace_key_func",
    "split_meta_namespace_key",
]

_log = get_logger(__name__)

KeyFunc = Callable[[Any], str]
"""Computes the cache key of an object; raises :class:`ValueError` if it cannot."""


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """An object that was deleted while the informer was not watching.

    A relist (after 410 Gone, or after a watch failure that forced a fresh LIST) finds that
    ``key`` is no longer on the server but cannot know the object's final state: ``obj`` is
    the last state the cache held, which may be stale. Delete handlers receive either the
    object itself or one of these tombstones, and must handle both.
    """

    key: str
    obj: Object


def deleted_object(obj: Any, kind: str) -> Object | None:
    """The object a delete handler received - itself, or the last state a
    :class:`DeletedFinalStateUnknown` holds - or ``None``, logged as an error, when that is
    not an object of ``kind`` (an object without ``kind``, as informers deliver some, counts
    as one). What every controller's delete handler does first."""
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    if not isinstance(obj, Mapping) or obj.get("kind", kind) != kind:
        _log.error("couldn't get the object from a tombstone", kind=kind, obj=repr(obj))
        return None
    return obj  # type: ignore[return-value]


def meta_namespace_key_func(obj: Any) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones.

    A :class:`DeletedFinalStateUnknown` yields its stored key (client-go's
    ``DeletionHandlingMetaNamespaceKeyFunc``), so stores can delete by tombstone. Raises
    :class:`ValueError` for anything without ``metadata.name``.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    try:
        metadata = obj["metadata"]
        name = metadata["name"]
    except (KeyError, TypeError) as err:
        raise ValueError(f"object has no metadata.name: {type(obj).__name__}") from err
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a cache key into ``(namespace, name)``; namespace is ``""`` for cluster scope.

    Raises :class:`ValueError` for keys with more than one ``/`` or an empty name.
    """
    parts = key.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")
