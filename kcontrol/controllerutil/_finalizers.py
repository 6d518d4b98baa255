"""Finalizers: add, remove and test them on a plain-dict object, and write them safely.

A finalizer is a string in ``metadata.finalizers``; while any remains, deleting the object
only sets ``metadata.deletionTimestamp``, and each controller removes its own finalizer once
it has cleaned up. The pure helpers (controller-runtime's ``AddFinalizer``,
``RemoveFinalizer``, ``ContainsFinalizer``) change the object in place: call them on a copy the
caller owns, never on an object taken from a cache.

:func:`patch_finalizers` writes the list back. ``finalizers`` is a plain list to the API
server, so a merge patch replaces it whole; the patch therefore carries the copy's
``resourceVersion``, and a copy that is stale (another writer added or removed a finalizer
since it was read) gets :class:`~kcontrol.errors.Conflict` instead of dropping the other
writer's entry. Re-read and retry (:func:`kcontrol.retry.retry_on_conflict`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kcontrol.client import Object, PatchType, Resource, Writer
from kcontrol.controllerutil._meta import metadata_of, object_key

__all__ = ["add_finalizer", "contains_finalizer", "patch_finalizers", "remove_finalizer"]


def contains_finalizer(obj: Mapping[str, Any], name: str) -> bool:
    """Whether ``name`` is in ``obj``'s ``metadata.finalizers``."""
    return name in _finalizers(obj)


def add_finalizer(obj: MutableMapping[str, Any], name: str) -> bool:
    """Append ``name`` to ``metadata.finalizers`` unless it is there; True if ``obj`` changed."""
    finalizers = _finalizers(obj)
    if name in finalizers:
        return False
    metadata_of(obj)["finalizers"] = [*finalizers, name]
    return True


def remove_finalizer(obj: MutableMapping[str, Any], name: str) -> bool:
    """Remove every occurrence of ``name`` from ``metadata.finalizers`` (the list is left empty,
    not deleted, when it was the last); True if ``obj`` changed."""
    finalizers = _finalizers(obj)
    kept = [f for f in finalizers if f != name]
    if len(kept) == len(finalizers):
        return False
    metadata_of(obj)["finalizers"] = kept
    return True


async def patch_finalizers(writer: Writer, resource: Resource, obj: Mapping[str, Any]) -> Object:
    """Write ``obj``'s ``metadata.finalizers`` - and nothing else - to the server; returns the
    object the server answered with.

    A JSON merge patch of the list, guarded by ``obj``'s ``metadata.resourceVersion`` (which
    must be set): :class:`~kcontrol.errors.Conflict` if the object changed since ``obj`` was
    read, :class:`~kcontrol.errors.NotFound` if it is gone. Name and namespace come from
    ``obj``. Removing the last finalizer of an object being deleted lets the server delete it;
    the answer is then the object as it was last stored.
    """
    name, namespace = object_key(resource, obj)
    resource_version = (obj.get("metadata") or {}).get("resourceVersion")
    if not resource_version:
        raise ValueError(
            "patch_finalizers needs metadata.resourceVersion (the optimistic lock that keeps "
            "other writers' finalizers): pass the object as read from the server"
        )
    patch = {
        "metadata": {
            "finalizers": list(_finalizers(obj)),
            "resourceVersion": resource_version,
        }
    }
    return await writer.patch(
        resource, name, patch, namespace=namespace, patch_type=PatchType.MERGE
    )


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or ())
