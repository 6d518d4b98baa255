"""Writes that send only what the caller means: a status merge patch, server-side apply.

- :func:`patch_status` merge-patches ``{"status": ...}`` to the ``status`` subresource: no
  whole-object PUT, no resourceVersion, so no Conflict from an unrelated write and no need to
  deep-copy a cached object first. Members of the given status replace the stored ones
  (nested objects merge, lists are replaced whole, ``None`` removes a member); members it
  does not mention stay.
- :func:`apply` and :func:`apply_status` are server-side apply (``PatchType.APPLY``): the
  object given is the caller's *applied configuration* - ``apiVersion``, ``kind``, name,
  namespace and only the fields this ``field_manager`` owns. The server merges it, records
  the manager as the owner of those fields, removes fields the manager applied before and
  has now left out, and refuses (Conflict) to take a field another manager owns unless
  ``force`` is set. Applying the same configuration again changes nothing, so a reconcile
  may apply on every pass. Never apply an object read from the server: it would claim every
  field, and its ``managedFields`` are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import Object, PatchType, Resource, Writer
from kcontrol.controllerutil._merge import holds_fields
from kcontrol.controllerutil._meta import object_key
from kcontrol.controllerutil._mutate import ObjectReader
from kcontrol.errors import NotFound

__all__ = ["apply", "apply_status", "patch_status"]


async def patch_status(
    writer: Writer, resource: Resource, obj: Mapping[str, Any], status: Mapping[str, Any]
) -> Object:
    """Merge-patch ``{"status": status}`` to the ``status`` subresource of the object named
    by ``obj`` (its name, and namespace for a namespaced resource); returns the object the
    server answered with. The resource must have a status subresource (NotFound otherwise).
    """
    name, namespace = object_key(resource, obj)
    return await writer.patch(
        resource,
        name,
        {"status": dict(status)},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        subresource="status",
    )


async def apply(
    writer: Writer,
    resource: Resource,
    obj: Mapping[str, Any],
    *,
    field_manager: str,
    force: bool = False,
    subresource: str | None = None,
    reader: ObjectReader | None = None,
) -> Object:
    """Server-side apply ``obj`` as ``field_manager``; returns the object the server answered
    with (created if it did not exist).

    With a ``reader`` (a cache, :class:`~kcontrol.informers.CacheReader`), nothing is sent
    when the object read already holds every field of ``obj`` with the same value
    (:func:`holds_fields`), and that object is returned: a reconcile may apply its desired
    state on every pass and write only when something differs. The read may be stale - then
    the apply is sent (harmless) or skipped until the watch brings the change, which wakes
    the reconcile again. One thing a skipped apply does not do: remove a field this manager
    applied before and no longer sets; that waits for the next apply that is sent.

    ``obj`` must carry ``apiVersion`` and ``kind`` (those of ``resource``), ``metadata.name``
    and, for a namespaced resource, ``metadata.namespace`` (``ValueError`` otherwise).
    ``force`` takes over fields other managers own instead of failing with
    :class:`~kcontrol.errors.Conflict` - what a controller that is the authority for its
    fields should do. ``subresource`` applies to a subresource (``"status"``: see
    :func:`apply_status`).
    """
    if not field_manager:
        raise ValueError("server-side apply needs a field_manager")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if (api_version, kind) != (resource.api_version, resource.kind):
        raise ValueError(
            f"an applied configuration needs apiVersion {resource.api_version!r} and kind "
            f"{resource.kind!r}, not {api_version!r} and {kind!r}"
        )
    name, namespace = object_key(resource, obj)
    if reader is not None:
        try:
            current = await reader.get(resource, name, namespace=namespace)
        except NotFound:
            pass
        else:
            fields = obj if subresource is None else {"status": obj.get("status") or {}}
            if holds_fields(current, _without_type(fields)):
                return dict(current)  # shallow: the cache's object must still not be mutated
    return await writer.patch(
        resource,
        name,
        obj,
        namespace=namespace,
        patch_type=PatchType.APPLY,
        subresource=subresource,
        field_manager=field_manager,
        force=force,
    )


async def apply_status(
    writer: Writer,
    resource: Resource,
    obj: Mapping[str, Any],
    *,
    field_manager: str,
    force: bool = False,
    reader: ObjectReader | None = None,
) -> Object:
    """Server-side apply ``obj``'s ``status`` to the ``status`` subresource as
    ``field_manager`` (controller-runtime's ``Status().Apply``): ``obj`` is an applied
    configuration as for :func:`apply`, holding the status fields this manager owns. Fields
    outside ``status`` in it are ignored by the server."""
    return await apply(
        writer,
        resource,
        obj,
        field_manager=field_manager,
        force=force,
        subresource="status",
        reader=reader,
    )


def _without_type(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without ``apiVersion`` and ``kind``: a cache may hold another version's
    objects, and a metadata-only one another kind's; the fields are what must match."""
    return {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
