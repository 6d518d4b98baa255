"""Owner references: who owns an object, set and removed on a plain-dict object.

controller-runtime's ``SetControllerReference`` family, over objects as the server sends them.
An ``ownerReferences`` entry names its owner by ``apiVersion``, ``kind``, ``name`` and ``uid``;
two entries refer to the same owner when their *group* (not version), kind and name agree, so
an owner that moved from ``v1beta1`` to ``v1`` keeps one entry, rewritten to the new version
(upstream's ``referSameObject``). At most one entry is the object's controller
(``controller: true``): the garbage collector deletes the object with it, and the builder's
``owns`` maps the object back to it.

The owner must carry ``apiVersion``, ``kind``, ``metadata.name`` and ``metadata.uid`` (an
object read from the API server or an informer cache has them). An owner may only own objects
of its own namespace, and a namespaced owner never owns a cluster-scoped object (upstream's
``validateOwner``; the garbage collector would treat such a reference as dangling and delete
the object). A cluster-scoped owner may own anything.

Every function changes the object in place: call it on a copy the caller owns, never on an
object taken from a cache.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kcontrol.controller import get_controller_of
from kcontrol.controllerutil._meta import metadata_of
from kcontrol.errors import AlreadyOwned

__all__ = [
    "has_controller_reference",
    "has_owner_reference",
    "remove_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]


def set_controller_reference(
    owner: Mapping[str, Any],
    obj: MutableMapping[str, Any],
    *,
    block_owner_deletion: bool = True,
) -> None:
    """Make ``owner`` the controller of ``obj``: upsert an ``ownerReferences`` entry with
    ``controller: true`` and ``blockOwnerDeletion`` (True unless told otherwise).

    An entry for the same owner (same group, kind and name, any version or UID) is replaced
    in place, keeping its position; otherwise the entry is appended. Raises
    :class:`~kcontrol.errors.AlreadyOwned` (``obj`` unchanged) when ``obj`` already has a
    *different* controller, and ``ValueError`` for an owner that cannot own ``obj`` (see the
    module docstring) or lacks ``apiVersion``, ``kind``, name or UID.
    """
    ref = _reference_to(owner, obj)
    ref["controller"] = True
    ref["blockOwnerDeletion"] = block_owner_deletion
    existing = get_controller_of(obj)
    if existing is not None and not _same_owner(existing, ref):
        raise AlreadyOwned(obj, existing)
    _upsert(obj, ref)


def set_owner_reference(
    owner: Mapping[str, Any],
    obj: MutableMapping[str, Any],
    *,
    block_owner_deletion: bool | None = None,
) -> None:
    """Record ``owner`` as an owner of ``obj`` that is not its controller: upsert an entry
    without ``controller`` (and without ``blockOwnerDeletion`` unless given).

    An existing entry for the same owner is replaced, as by
    :func:`set_controller_reference` - which drops its ``controller`` flag. Raises
    ``ValueError`` as :func:`set_controller_reference` does.
    """
    ref = _reference_to(owner, obj)
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    _upsert(obj, ref)


def has_controller_reference(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` has an ``ownerReferences`` entry with ``controller: true``."""
    return get_controller_of(obj) is not None


def has_owner_reference(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``obj`` has an ``ownerReferences`` entry for ``owner`` (same group, kind and
    name; the UID is not compared, as upstream's ``HasOwnerReference``)."""
    wanted = _identity(owner)
    return any(_same_owner(ref, wanted) for ref in _references(obj))


def remove_owner_reference(owner: Mapping[str, Any], obj: MutableMapping[str, Any]) -> bool:
    """Remove the ``ownerReferences`` entry for ``owner`` (controller or not) from ``obj``.

    Returns whether one was removed; upstream returns an error where this returns False.
    """
    wanted = _identity(owner)
    refs = _references(obj)
    kept = [ref for ref in refs if not _same_owner(ref, wanted)]
    if len(kept) == len(refs):
        return False
    metadata_of(obj)["ownerReferences"] = kept
    return True


def remove_controller_reference(owner: Mapping[str, Any], obj: MutableMapping[str, Any]) -> bool:
    """Remove ``owner``'s entry from ``obj`` only if it is ``obj``'s controller reference.

    Returns whether one was removed: False (``obj`` unchanged) when ``obj`` has no controller,
    or ``owner`` is not it - an entry for ``owner`` without ``controller: true`` stays.
    """
    controller = get_controller_of(obj)
    if controller is None or not _same_owner(controller, _identity(owner)):
        return False
    return remove_owner_reference(owner, obj)


# -- helpers --------------------------------------------------------------------------------------


def _references(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    meta = obj.get("metadata") or {}
    return list(meta.get("ownerReferences") or ())


def _identity(owner: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that identify ``owner`` in a reference: apiVersion, kind, name."""
    meta = owner.get("metadata") or {}
    identity = {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": meta.get("name"),
    }
    missing = [field for field, value in identity.items() if not value]
    if missing:
        raise ValueError(f"the owner has no {' or '.join(missing)}: cannot refer to it")
    return identity


def _reference_to(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """A new reference to ``owner`` (apiVersion, kind, name, uid), after checking that
    ``owner`` may own ``obj``."""
    ref = _identity(owner)
    owner_meta = owner.get("metadata") or {}
    uid = owner_meta.get("uid")
    if not uid:
        raise ValueError(
            f"the owner {ref['kind']} {ref['name']} has no metadata.uid: "
            "use the object as the API server returned it"
        )
    ref["uid"] = uid
    owner_namespace = owner_meta.get("namespace") or ""
    if owner_namespace:
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        if not namespace:
            raise ValueError(
                "a cluster-scoped object must not have a namespaced owner "
                f"(owner's namespace {owner_namespace}); set metadata.namespace on a "
                "namespaced object before its owner reference"
            )
        if namespace != owner_namespace:
            raise ValueError(
                "cross-namespace owner references are disallowed: owner's namespace "
                f"{owner_namespace}, object's namespace {namespace}"
            )
    return ref


def _group(api_version: Any) -> str | None:
    """The group of ``apiVersion`` (``""`` for the core ``v1``); None if it is malformed."""
    if not isinstance(api_version, str) or not api_version or api_version.count("/") > 1:
        return None
    return api_version.rpartition("/")[0]


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two references name the same object: group, kind and name (upstream's
    ``referSameObject``; a malformed apiVersion matches nothing)."""
    group = _group(a.get("apiVersion"))
    return (
        group is not None
        and group == _group(b.get("apiVersion"))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _upsert(obj: MutableMapping[str, Any], ref: dict[str, Any]) -> None:
    refs = _references(obj)
    for index, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[index] = ref
            break
    else:
        refs.append(ref)
    metadata_of(obj)["ownerReferences"] = refs
