"""The fake API server's field management per write: which manager a write is recorded
under, which fields a write through the main resource or the status subresource may own,
the checks on a server-side apply request, and the ``managedFields`` a create, update,
patch or apply leaves on the object (see :mod:`kcontrol.testing.fake._ssa._fieldmanager` for
the ownership rules themselves).

An apply to an object without managedFields (seeded without them, or cleared) first
records all of the object's fields under :data:`BEFORE_FIRST_APPLY`, as the server does: an
apply that changes them conflicts unless forced.

The default manager of a create, update or non-apply patch is :data:`DEFAULT_FIELD_MANAGER`,
``"kcontrol"``: what the server derives from :class:`~kcontrol.client.ApiClient`'s default
user agent (``kcontrol/<version>``, cut at the first ``/``). A fake client configured with
another name stands for a client with another user agent, or one that passes
``field_manager``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson
import yaml

from kcontrol.client import Object, Resource
from kcontrol.client._decode import decode_json, encode_json
from kcontrol.errors import BadRequest, Invalid
from kcontrol.testing.fake._ssa._fieldmanager import (
    APPLY,
    UPDATE,
    FieldManager,
    Managed,
    ManagerId,
    decode_managed_fields,
    encode_managed_fields,
    is_reset,
)
from kcontrol.testing.fake._ssa._fieldpath import Path
from kcontrol.testing.fake._ssa._shape import Shape

__all__ = [
    "BEFORE_FIRST_APPLY",
    "DEFAULT_FIELD_MANAGER",
    "apply_config",
    "check_write_options",
    "record_apply",
    "record_update",
]

DEFAULT_FIELD_MANAGER: Final = "kcontrol"
"""The manager of writes that name none (see the module docstring)."""

BEFORE_FIRST_APPLY: Final = "before-first-apply"
"""The manager the server records an object's fields under when an apply finds no
managedFields on it (an object seeded without them, or whose entries were cleared)."""

_STATUS: Final = "f:status"


def check_write_options(*, apply: bool, field_manager: str | None, force: bool | None) -> None:
    """The server's validation of a patch's options: apply needs a field manager, and only
    apply takes ``force`` (both 422 Invalid)."""
    if apply and not field_manager:
        raise Invalid(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
            "is required for apply patch"
        )
    if not apply and force is not None:
        raise Invalid(
            'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
            "may not be specified for non-apply patch"
        )


def apply_config(
    resource: Resource,
    name: str,
    namespace: str,
    patch: Any,
    *,
    served: Callable[[str, str], bool],
) -> Object:
    """The applied configuration of a server-side apply request: ``patch`` as YAML or JSON
    text, or decoded; it must be an object of the resource's apiVersion and kind, naming
    the request's object (or no name), without ``managedFields`` (BadRequest otherwise).
    ``served(apiVersion, kind)`` says whether the server knows a type, which decides the
    server's message for a configuration of another version."""
    try:
        if isinstance(patch, bytes | bytearray | memoryview | str):
            text = bytes(patch) if not isinstance(patch, str) else patch.encode()
            try:
                config = orjson.loads(text)
            except orjson.JSONDecodeError:
                config = yaml.safe_load(text)
        else:
            config = decode_json(encode_json(patch))
    except (yaml.YAMLError, TypeError) as err:
        raise BadRequest(f"the apply patch is neither JSON nor YAML: {err}") from None
    if not isinstance(config, dict):
        raise BadRequest("an apply patch must be an object")
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if api_version != resource.api_version and not served(str(api_version), str(kind)):
        raise BadRequest(f"invalid object type: {api_version}, Kind={kind}")
    if api_version != resource.api_version:
        raise BadRequest(
            "Incorrect version specified in apply patch. Specified patch version: "
            f"{config.get('apiVersion')}, expected: {resource.api_version}"
        )
    if config.get("kind") != resource.kind:
        raise BadRequest(
            f"the apply patch is a {config.get('kind')}, but the request is for {resource.kind}"
        )
    metadata = config.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise BadRequest("metadata must be an object")
    if metadata.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")
    if metadata.setdefault("name", name) != name:
        raise BadRequest(
            f"the name of the object ({metadata['name']}) does not match the name on the "
            f"URL ({name})"
        )
    if resource.namespaced and metadata.setdefault("namespace", namespace) != namespace:
        raise BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return config


def _owns(status_only: bool, has_status: bool) -> Callable[[Path], bool]:
    if status_only:
        return lambda path: path[:1] == (_STATUS,)
    if has_status:
        return lambda path: path[:1] != (_STATUS,)
    return lambda path: True


def _field_manager(
    resource: Resource, shape: Shape, *, status_only: bool, has_status: bool, now: str
) -> FieldManager:
    return FieldManager(shape, resource.api_version, owns=_owns(status_only, has_status), now=now)


def _decoded(entries: Any) -> Managed | None:
    try:
        return decode_managed_fields(entries)
    except ValueError:
        return None


def _store(metadata: dict[str, Any], managed: Managed, stored: Any) -> None:
    """Write ``managed`` into ``metadata``; when it equals what ``stored`` (the previous
    entries) records, those entries are kept as they were, so an unchanged object stays
    equal."""
    if stored is not None and _decoded(stored) == managed:
        metadata["managedFields"] = stored
    elif managed:
        metadata["managedFields"] = encode_managed_fields(managed)
    else:
        metadata.pop("managedFields", None)


def record_update(
    resource: Resource,
    shape: Shape,
    old: Object | None,
    new: Object,
    *,
    manager: str,
    status_only: bool,
    has_status: bool,
    now: str,
) -> None:
    """Set ``new``'s managedFields after a create (``old`` None), update or non-apply patch
    by ``manager``. The ownership starts from the entries the request carried when it
    carried any (``[]`` or ``[{}]`` clears them), else from the stored object's - as on
    the server, a status write never takes the request's."""
    metadata = new["metadata"]
    stored = old["metadata"].get("managedFields") if old is not None else None
    requested = metadata.get("managedFields")
    base: Managed
    if not status_only and is_reset(requested):
        base = {}
    else:
        base = (None if status_only else _decoded(requested)) or _decoded(stored) or {}
    fields = _field_manager(
        resource, shape, status_only=status_only, has_status=has_status, now=now
    )
    identity = ManagerId(manager, UPDATE, resource.api_version, "status" if status_only else "")
    empty: Object = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": {}}
    managed = fields.update(old if old is not None else empty, new, base, identity)
    _store(metadata, managed, stored)


def record_apply(
    resource: Resource,
    shape: Shape,
    old: Object | None,
    config: Object,
    *,
    manager: str,
    force: bool,
    status_only: bool,
    has_status: bool,
    now: str,
) -> tuple[Object, Any]:
    """The object ``manager`` applying ``config`` to ``old`` (None: create it) asks for, and
    the managedFields to store with it; Conflict as the server answers. The object still
    has to pass the write rules (status subresource, server-owned metadata)."""
    stored = old["metadata"].get("managedFields") if old is not None else None
    try:
        base = decode_managed_fields(stored)
    except ValueError as err:
        raise BadRequest(f"failed to decode managed fields: {err}") from None
    subresource = "status" if status_only else ""
    empty: Object = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": {}}
    fields = _field_manager(
        resource, shape, status_only=status_only, has_status=has_status, now=now
    )
    if old is None:
        old = empty
    elif not base:
        # An object nobody owns fields of was written by someone all the same: the server
        # first records it all under "before-first-apply", so the apply cannot silently take
        # over fields it did not set.
        first = ManagerId(BEFORE_FIRST_APPLY, UPDATE, resource.api_version, subresource)
        base = fields.update(empty, old, base, first)
    identity = ManagerId(manager, APPLY, "", subresource)
    merged, managed = fields.apply(old, config, base, identity, force=force)
    holder: dict[str, Any] = {}
    _store(holder, managed, stored)
    return merged, holder.get("managedFields")
