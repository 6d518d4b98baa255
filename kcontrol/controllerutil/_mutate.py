"""Create or converge one object: read it, let a function mutate it, write only a change.

controller-runtime's ``CreateOrUpdate`` and ``CreateOrPatch``. A reconcile that owns an object
says what the object must look like in a *mutate* function - set the fields it owns on the
object it is given (the live object, or a fresh one), leave the rest alone - and these
helpers do the rest: GET the object; if it is missing, mutate a fresh copy and create it;
otherwise mutate a copy of what was read and write only if that changed something. An
unchanged object costs one read and no write, so calling them on every reconcile is cheap.

The two differ in how they write:

- :func:`create_or_update` PUTs the whole object with the resourceVersion it read, so a
  stale read (a cache that lags, a concurrent writer) fails with
  :class:`~kcontrol.errors.Conflict`: retry with :func:`kcontrol.retry.retry_on_conflict`.
  Changes to ``status`` are not written (the status subresource ignores them on a PUT).
- :func:`create_or_patch` sends a JSON merge patch of the difference (:func:`merge_patch`),
  so fields it did not change are never written back, even from a stale read; a changed
  ``status`` goes in a second merge patch to the ``status`` subresource. Lists are replaced
  whole by a merge patch: pass ``optimistic_lock=True`` when the mutate edits a list other
  writers edit too (finalizers, say), and a stale read then gets Conflict instead.

Reads go to ``reader`` when one is given - an informer cache behind the tiny
:class:`ObjectReader` protocol, which must hold whole objects (no transform that drops fields,
no metadata-only cache) - and to the client otherwise. Objects are never mutated in place:
the mutate function receives a deep copy, and the caller's object and the cache's stay as
they were. The mutate function must not change the name or namespace (``ValueError``, nothing
written). Defaulted fields are a trap, as upstream: a mutate that clears a field the server
defaults writes on every call.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from kcontrol.client import Client, Object, PatchType, Resource, deep_copy
from kcontrol.controllerutil._merge import json_equal, merge_patch
from kcontrol.controllerutil._meta import metadata_of, object_key
from kcontrol.errors import NotFound
from kcontrol.logging import get_logger

__all__ = ["MutateFn", "ObjectReader", "OperationResult", "create_or_patch", "create_or_update"]

_log = get_logger(__name__)

MutateFn = Callable[[Object], Awaitable[None] | None]
"""Changes the object it is given, in place, into the desired state; may be ``async``.

It receives the live object (a copy) or, when the object does not exist, a copy of the
object passed to the helper. An exception it raises propagates and nothing is written."""


class OperationResult(enum.StrEnum):
    """What :func:`create_or_update` / :func:`create_or_patch` did; the values are
    controller-runtime's ``OperationResult`` strings and complete the sentence "Deployment
    default/web has been ...", ready for a log line or an Event."""

    NONE = "unchanged"
    """The object exists and the mutate function changed nothing: nothing was written."""
    CREATED = "created"
    UPDATED = "updated"
    """The object (everything but its status) was written."""
    UPDATED_STATUS = "updatedStatus"
    """The object and its status were written (:func:`create_or_patch` only)."""
    UPDATED_STATUS_ONLY = "updatedStatusOnly"
    """Only the status was written (:func:`create_or_patch` only)."""


class ObjectReader(Protocol):
    """Reads one object by name: the client, or a cache-backed reader. Raises
    :class:`~kcontrol.errors.NotFound` when there is no such object. The object it returns
    is never changed by the helpers."""

    async def get(
        self, resource: Resource, name: str, *, namespace: str | None = None
    ) -> Mapping[str, Any]: ...


async def create_or_update(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    mutate: MutateFn,
    *,
    reader: ObjectReader | None = None,
) -> tuple[Object, OperationResult]:
    """Create ``obj`` (as ``mutate`` shapes it) if it does not exist, else PUT it when
    ``mutate`` changed it; see the module docstring.

    ``obj`` names the object (``metadata.name``, and ``metadata.namespace`` for a namespaced
    resource); anything else in it is only used when creating. Returns the object the server
    answered with (CREATED, UPDATED) or, when nothing changed (NONE), the object read. Errors
    of the read other than NotFound, and of the write, propagate.
    """
    key = object_key(resource, obj)
    current = await _read(client, reader, resource, key)
    if current is None:
        return await _create(client, resource, obj, mutate, key), OperationResult.CREATED
    desired = deep_copy(current)
    await _mutate(mutate, desired, resource, key)
    if json_equal(desired, current):
        return desired, OperationResult.NONE
    updated = await client.update(resource, desired, namespace=key[1])
    _log.debug("updated", resource=resource.plural, name=key[0], namespace=key[1])
    return updated, OperationResult.UPDATED


async def create_or_patch(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    mutate: MutateFn,
    *,
    reader: ObjectReader | None = None,
    optimistic_lock: bool = False,
) -> tuple[Object, OperationResult]:
    """Create ``obj`` (as ``mutate`` shapes it) if it does not exist, else merge-patch what
    ``mutate`` changed; see the module docstring.

    Everything but ``status`` goes in one merge patch; a changed ``status`` in a second one,
    to the ``status`` subresource (which the resource must have), sent after the first.
    Status changes made when creating are not written (the create ignores them, as
    upstream; requeue on CREATED to set the status). ``optimistic_lock`` adds the
    resourceVersion read to each patch, so a stale read fails with Conflict. Returns the
    object the server answered with last, or the object read when nothing changed, and
    UPDATED, UPDATED_STATUS, UPDATED_STATUS_ONLY, CREATED or NONE.
    """
    key = object_key(resource, obj)
    current = await _read(client, reader, resource, key)
    if current is None:
        return await _create(client, resource, obj, mutate, key), OperationResult.CREATED
    desired = deep_copy(current)
    await _mutate(mutate, desired, resource, key)
    object_patch = merge_patch(_without_status(current), _without_status(desired))
    status_patch = merge_patch(_only_status(current), _only_status(desired))
    name, namespace = key
    result, answer = OperationResult.NONE, desired
    resource_version = (current.get("metadata") or {}).get("resourceVersion")
    if object_patch:
        if optimistic_lock:
            _lock(object_patch, resource_version)
        answer = await client.patch(
            resource, name, object_patch, namespace=namespace, patch_type=PatchType.MERGE
        )
        result = OperationResult.UPDATED
        resource_version = (answer.get("metadata") or {}).get("resourceVersion")
    if status_patch:
        if optimistic_lock:
            _lock(status_patch, resource_version)
        answer = await client.patch(
            resource,
            name,
            status_patch,
            namespace=namespace,
            patch_type=PatchType.MERGE,
            subresource="status",
        )
        result = (
            OperationResult.UPDATED_STATUS
            if result is OperationResult.UPDATED
            else OperationResult.UPDATED_STATUS_ONLY
        )
    if result is not OperationResult.NONE:
        _log.debug("patched", resource=resource.plural, name=name, namespace=namespace)
    return answer, result


# -- steps ----------------------------------------------------------------------------------------


async def _read(
    client: Client, reader: ObjectReader | None, resource: Resource, key: tuple[str, str | None]
) -> Object | None:
    """A private deep copy of the object, or None if it does not exist."""
    source: ObjectReader = reader if reader is not None else client
    try:
        found = await source.get(resource, key[0], namespace=key[1])
    except NotFound:
        return None
    return deep_copy(dict(found))


async def _create(
    client: Client,
    resource: Resource,
    obj: Mapping[str, Any],
    mutate: MutateFn,
    key: tuple[str, str | None],
) -> Object:
    desired: Object = deep_copy(dict(obj))
    desired.setdefault("apiVersion", resource.api_version)
    desired.setdefault("kind", resource.kind)
    await _mutate(mutate, desired, resource, key)
    created = await client.create(resource, desired, namespace=key[1])
    _log.debug("created", resource=resource.plural, name=key[0], namespace=key[1])
    return created


async def _mutate(
    mutate: MutateFn, obj: Object, resource: Resource, key: tuple[str, str | None]
) -> None:
    """Run ``mutate`` on ``obj`` and refuse a change of name or namespace."""
    outcome = mutate(obj)
    if inspect.isawaitable(outcome):
        await outcome
    meta = metadata_of(obj)
    namespace = meta.get("namespace") if resource.namespaced else None
    if (meta.get("name"), namespace) != key:
        raise ValueError(
            f"the mutate function must not change the name or namespace of {resource.kind} "
            f"{'/'.join(p for p in (key[1], key[0]) if p)}"
        )


def _without_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


def _only_status(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"status": obj["status"]} if "status" in obj else {}


def _lock(patch: dict[str, Any], resource_version: Any) -> None:
    if resource_version:
        patch.setdefault("metadata", {})["resourceVersion"] = resource_version
