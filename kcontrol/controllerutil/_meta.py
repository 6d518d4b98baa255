"""Reading and writing ``metadata`` of plain-dict objects, shared by the helpers."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kcontrol.client import Resource

__all__ = ["metadata_of", "object_key"]


def metadata_of(obj: MutableMapping[str, Any]) -> dict[str, Any]:
    """``obj["metadata"]``, created empty if missing, for changing in place."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise TypeError(f"metadata is a {type(meta).__name__}, not a dict")
    return meta


def object_key(resource: Resource, obj: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(name, namespace)`` of ``obj`` for a request on ``resource``: the namespace is None
    for a cluster-scoped resource and required for a namespaced one (``ValueError``)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name or not isinstance(name, str):
        raise ValueError(f"the {resource.kind} has no metadata.name")
    if not resource.namespaced:
        return name, None
    namespace = meta.get("namespace")
    if not namespace or not isinstance(namespace, str):
        raise ValueError(f"{resource.kind} {name} is namespaced but has no metadata.namespace")
    return name, namespace
