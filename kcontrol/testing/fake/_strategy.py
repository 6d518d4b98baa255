"""Per-object write rules of the fake API server (the generic registry's "strategies").

Pure functions over plain-dict objects: what ``PrepareForCreate``/``PrepareForUpdate`` and the
storage preconditions do upstream, for the rules a controller can observe. The tracker calls
them; it owns storage, resourceVersions and watches.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from kcontrol.client import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    CONFIGMAPS,
    CONTROLLERREVISIONS,
    DEPLOYMENTS,
    ENDPOINTS,
    ENDPOINTSLICES,
    EVENTS,
    LEASES,
    LIMITRANGES,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PRIORITYCLASSES,
    RESOURCEQUOTAS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    STORAGECLASSES,
    Object,
    Resource,
)
from kcontrol.client._decode import decode_json, encode_json
from kcontrol.errors import BadRequest, Conflict, Invalid, NotFound

__all__ = [
    "WITHOUT_GENERATION",
    "check_preconditions",
    "copy_object",
    "details",
    "metadata_of",
    "not_found",
    "prepare_for_create",
    "prepare_for_update",
    "qualified",
    "set_kind",
    "set_scope",
]

SERVER_OWNED_METADATA: Final = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
"""Metadata only the server sets: cleared on create, kept from the stored object on update."""

WITHOUT_GENERATION: Final = frozenset(
    {
        CONFIGMAPS,
        SECRETS,
        EVENTS,
        LEASES,
        NAMESPACES,
        SERVICES,
        SERVICEACCOUNTS,
        ENDPOINTS,
        ENDPOINTSLICES,
        NODES,
        PERSISTENTVOLUMES,
        PERSISTENTVOLUMECLAIMS,
        LIMITRANGES,
        RESOURCEQUOTAS,
        ROLES,
        ROLEBINDINGS,
        CLUSTERROLES,
        CLUSTERROLEBINDINGS,
        PRIORITYCLASSES,
        STORAGECLASSES,
        CONTROLLERREVISIONS,
    }
)
"""Built-in resources whose objects have no ``metadata.generation`` (their strategies never
set it); every other resource, custom resources included, has one."""

_ANNOTATIONS_BUMP_GENERATION: Final = frozenset({DEPLOYMENTS})
_NOT_SPEC: Final = frozenset({"apiVersion", "kind", "metadata"})


def copy_object(obj: Any) -> Any:
    """A deep copy through the client's JSON codec - what a real client would send, decoded
    as it decodes answers - which also rejects values the API could not carry."""
    try:
        return decode_json(encode_json(obj))
    except TypeError as err:
        raise BadRequest(f"the object is not valid JSON: {err}") from None


def metadata_of(obj: Object) -> dict[str, Any]:
    """``obj["metadata"]``, created if absent; BadRequest if it is not an object."""
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise BadRequest("metadata must be an object")
    return metadata


def qualified(resource: Resource) -> str:
    """``deployments.apps``, or ``pods`` for the core group, as in the server's messages."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def details(resource: Resource, name: str) -> dict[str, str]:
    """The ``details`` of a failure Status about one object."""
    return {"name": name, "group": resource.group, "kind": resource.plural}


def not_found(resource: Resource, name: str) -> NotFound:
    return NotFound(f'{qualified(resource)} "{name}" not found', details=details(resource, name))


def set_kind(resource: Resource, obj: Object) -> None:
    """Default ``apiVersion``/``kind`` from ``resource``; BadRequest if they disagree."""
    api_version = obj.setdefault("apiVersion", resource.api_version)
    kind = obj.setdefault("kind", resource.kind)
    if (api_version, kind) != (resource.api_version, resource.kind):
        raise BadRequest(
            f"the object is a {api_version}/{kind}, but the request is for "
            f"{resource.api_version}/{resource.kind}"
        )


def set_scope(resource: Resource, metadata: dict[str, Any], namespace: str) -> None:
    """Set the namespace of a namespaced object; drop it from a cluster-scoped one."""
    if resource.namespaced:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)


def check_preconditions(
    resource: Resource,
    stored: Object,
    uid: Any,
    resource_version: Any,
    *,
    deleting: bool = False,
) -> None:
    """Conflict unless the non-empty ``uid``/``resource_version`` match ``stored``'s (a
    different ``uid`` on an update or patch is Invalid, as on the real server)."""
    metadata = stored["metadata"]
    name = metadata["name"]
    prefix = f'Operation cannot be fulfilled on {qualified(resource)} "{name}": '
    if uid and uid != metadata.get("uid") and not deleting:
        # A write carrying another uid changes an immutable field: the server answers 422.
        raise Invalid(
            f'{qualified(resource)} "{name}" is invalid: metadata.uid: Invalid value: '
            f'"{uid}": field is immutable',
            details=details(resource, name),
        )
    if uid and uid != metadata.get("uid"):
        raise Conflict(
            f"{prefix}Precondition failed: UID in precondition: {uid}, "
            f"UID in object meta: {metadata.get('uid')}",
            details=details(resource, name),
        )
    if resource_version and resource_version != metadata.get("resourceVersion"):
        if deleting:
            message = (
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {metadata.get('resourceVersion')}"
            )
        else:
            message = (
                "the object has been modified; please apply your changes to the latest "
                "version and try again"
            )
        raise Conflict(prefix + message, details=details(resource, name))


def prepare_for_create(resource: Resource, new: Object, *, has_status: bool, now: str) -> None:
    """Set the server-owned metadata of a new object (in place): ``generation: 1`` unless
    the resource has none (:data:`WITHOUT_GENERATION`); a resource with a status
    subresource starts without status."""
    metadata = new["metadata"]
    if metadata.get("resourceVersion"):
        raise BadRequest("resourceVersion should not be set on objects to be created")
    for field in SERVER_OWNED_METADATA:
        metadata.pop(field, None)
    metadata["uid"] = str(uuid.uuid4())
    metadata["creationTimestamp"] = now
    if resource not in WITHOUT_GENERATION:
        metadata["generation"] = 1
    if has_status:
        new.pop("status", None)


def prepare_for_update(
    resource: Resource,
    stored: Object,
    incoming: Object,
    *,
    status_only: bool,
    has_status: bool,
) -> Object:
    """The object to store when ``incoming`` replaces ``stored`` (``incoming`` is private to
    the caller and may be reused). The result carries ``stored``'s resourceVersion.

    A status write takes only ``status`` from ``incoming``. A main-resource write keeps the
    server-owned metadata and, with a status subresource, the stored status, and bumps
    ``generation`` (of a resource that has one) when anything outside ``metadata`` changed -
    outside ``metadata`` and ``status`` with a status subresource; for Deployments also the
    annotations. While the object is being deleted, no finalizer may be added.
    """
    stored_metadata = stored["metadata"]
    if status_only:
        new: Object = copy_object(stored)
        if "status" in incoming:
            new["status"] = incoming["status"]
        else:
            new.pop("status", None)
    else:
        new = incoming
        metadata = new["metadata"]
        for field in (*SERVER_OWNED_METADATA, "name", "namespace"):
            if field in stored_metadata:
                metadata[field] = stored_metadata[field]
            else:
                metadata.pop(field, None)
        if has_status:
            if "status" in stored:
                new["status"] = stored["status"]
            else:
                new.pop("status", None)
        if resource not in WITHOUT_GENERATION and _spec(resource, new, has_status) != _spec(
            resource, stored, has_status
        ):
            metadata["generation"] = int(stored_metadata.get("generation") or 0) + 1
    metadata = new["metadata"]
    if stored_metadata.get("deletionTimestamp"):
        before = set(stored_metadata.get("finalizers") or ())
        if set(metadata.get("finalizers") or ()) - before:
            name = stored_metadata["name"]
            raise Invalid(
                f'{resource.kind} "{name}" is invalid: metadata.finalizers: Forbidden: '
                "no new finalizers can be added if the object is being deleted",
                details=details(resource, name),
            )
    metadata["resourceVersion"] = stored_metadata["resourceVersion"]
    return new


def _spec(resource: Resource, obj: Object, has_status: bool) -> Object:
    """The part of ``obj`` whose changes bump ``metadata.generation``."""
    spec = {
        k: v for k, v in obj.items() if k not in _NOT_SPEC and not (has_status and k == "status")
    }
    if resource in _ANNOTATIONS_BUMP_GENERATION:
        spec["metadata.annotations"] = obj["metadata"].get("annotations") or {}
    return spec
