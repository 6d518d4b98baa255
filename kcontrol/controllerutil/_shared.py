"""Writing some entries of an object many reconciles share: a registry ConfigMap each
Memcached adds its own key to, a parent's map of its children's states.

Each reconcile owns a few keys of one map-valued field (``data`` by default) and must leave
everyone else's alone. The two obvious tools both fail at this:

- server-side apply with one field manager for all reconciles: each apply states the whole
  set that manager owns, so applying one key *removes* the keys the other reconciles applied;
- server-side apply with one field manager per key (or per owner): correct, but every manager
  adds an entry to ``metadata.managedFields``, which the API server reads and rewrites on
  every write to the object - measured on envtest with 50 keys (issue 39), the whole set
  took 0.86 s to write against 0.14 s with merge patches, 3.5 s against 0.16 s with five
  writers at once, and removing them 4.1 s against 0.23 s.

:func:`patch_entries` sends one JSON merge patch (RFC 7386) of just the keys given - a value
sets a key, ``None`` removes it - with no resourceVersion precondition: merge patches of
different keys never conflict, each is applied atomically on the latest object, and nothing
else of the object (other keys, labels, other writers' fields) is sent or touched. It adds no
``managedFields`` entry beyond the one of the writer's field manager (the client's user
agent). Given a ``reader`` (a cache), nothing is sent when the cached object already holds
every entry - a reconcile can call it on every pass. ``create=True`` creates the object with
the entries when it does not exist yet (two reconciles racing to create it: the loser
patches).

What it cannot do: read-modify-write a value (a counter, a list two reconciles append to) -
that needs the object's resourceVersion as a precondition and a retry on conflict
(:func:`kcontrol.retry.retry_on_conflict`); or replace a map wholesale - one writer should
own such a map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import Client, Object, PatchType, Resource
from kcontrol.controllerutil._merge import json_equal
from kcontrol.controllerutil._mutate import ObjectReader
from kcontrol.errors import AlreadyExists, NotFound

__all__ = ["patch_entries"]


async def patch_entries(
    client: Client,
    resource: Resource,
    name: str,
    entries: Mapping[str, Any],
    *,
    namespace: str | None = None,
    field: str | Sequence[str] = "data",
    reader: ObjectReader | None = None,
    create: bool = False,
) -> Object | None:
    """Set (a value) or remove (``None``) the ``entries`` of the map at ``field`` of one
    object with a single merge patch (module docstring); returns the object the server
    answered with, or ``None`` when nothing was sent.

    ``field`` is a top-level field name or a path (``("status", "members")``). With a
    ``reader``, the write is skipped when the object read already holds every entry (and
    lacks every removed one). A missing object raises :class:`~kcontrol.errors.NotFound`,
    unless ``create`` is set: then it is created holding the entries that set a value.
    """
    path = (field,) if isinstance(field, str) else tuple(field)
    if not path or not entries:
        raise ValueError("patch_entries needs a field and at least one entry")
    if reader is not None:
        try:
            current = await reader.get(resource, name, namespace=namespace)
        except NotFound:
            current = None
        if current is not None and _holds(_map_at(current, path), entries):
            return None
    patch = _nest(path, dict(entries))
    try:
        return await client.patch(
            resource, name, patch, namespace=namespace, patch_type=PatchType.MERGE
        )
    except NotFound:
        if not create:
            raise
    values = {key: value for key, value in entries.items() if value is not None}
    body: dict[str, Any] = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        **_nest(path, values),
    }
    try:
        return await client.create(resource, body, namespace=namespace)
    except AlreadyExists:  # another reconcile created it first: patch that one
        return await client.patch(
            resource, name, patch, namespace=namespace, patch_type=PatchType.MERGE
        )


def _map_at(obj: Mapping[str, Any], path: Sequence[str]) -> Mapping[str, Any]:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _holds(current: Mapping[str, Any], entries: Mapping[str, Any]) -> bool:
    for key, value in entries.items():
        if value is None:
            if key in current:
                return False
        elif key not in current or not json_equal(current[key], value):
            return False
    return True


def _nest(path: Sequence[str], leaf: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = leaf
    for key in reversed(path):
        value = {key: value}
    return value
