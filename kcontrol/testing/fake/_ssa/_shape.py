"""How server-side apply treats each field of an object: the part of a type's schema that
field ownership depends on.

A :class:`Shape` answers, for the value at one place in an object: is a map *atomic*
(owned and replaced as one value), is a list atomic, a set (items named by value) or a map
(items named by key fields), which fields does a map declare. The real server reads this
from the OpenAPI schema of every type; the fake has two sources:

- :class:`BuiltinShape`, for the built-in kinds, chooses **by field name**, wherever the
  field sits: the lists in :data:`KEYED_LISTS` are keyed (``containers``, ``env``,
  ``volumes``... by ``name``; ``ports`` by ``containerPort`` or ``port`` plus ``protocol``,
  which defaults to ``TCP``; ``conditions`` by ``type``; ``ownerReferences`` by ``uid``),
  ``finalizers`` is a set, ``selector`` and ``nodeSelector`` are atomic maps, every other
  list is atomic, every other map is merged key by key;
- :class:`SchemaShape` reads a CustomResourceDefinition's ``openAPIV3Schema``:
  ``x-kubernetes-list-type`` (``atomic``, the default, ``set`` or ``map`` with
  ``x-kubernetes-list-map-keys``, key defaults from the items' ``default``),
  ``x-kubernetes-map-type: atomic``, ``properties`` (declared fields) and
  ``additionalProperties``; ``metadata`` is the built-in ObjectMeta.

Field names that :class:`BuiltinShape` gets wrong for some kind (a list a real type keys
differently) show as different ``managedFields`` and merges; the common ones are right.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol

from kcontrol.errors import Invalid
from kcontrol.testing.fake._ssa._fieldpath import PathElement, key_element, value_element

__all__ = ["KEYED_LISTS", "BuiltinShape", "ListKind", "SchemaShape", "Shape"]

ListKind = Literal["atomic", "set", "map"]

KEYED_LISTS: Final[Mapping[str, tuple[str, ...]]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
}
"""Built-in list fields merged element-wise, and their key fields (``ports`` is separate:
its keys depend on the element)."""

_SET_LISTS: Final = frozenset({"finalizers"})
_ATOMIC_MAPS: Final = frozenset({"selector", "nodeSelector"})
_PORT_KEY_DEFAULTS: Final = {"protocol": "TCP"}


class Shape(Protocol):
    """The schema of the value at one place in an object."""

    @property
    def atomic_map(self) -> bool:
        """A map owned and replaced as one value."""
        ...

    @property
    def list_kind(self) -> ListKind: ...

    def child(self, name: str) -> Shape:
        """The shape of field ``name`` of this map."""
        ...

    def item(self) -> Shape:
        """The shape of this list's items."""
        ...

    def declares(self, name: str) -> bool:
        """Whether ``name`` is a declared field of this map (a struct field), rather than a
        key of a free-form map: applying a non-empty map under an undeclared key owns the
        key itself too."""
        ...

    def element(self, item: Any) -> PathElement:
        """The path element naming ``item`` in this set or keyed list; Invalid if a keyed
        item lacks a key field that has no default."""
        ...


def _keyed_element(
    item: Any, keys: tuple[str, ...], defaults: Mapping[str, Any], where: str
) -> PathElement:
    if not isinstance(item, Mapping):
        raise Invalid(f"{where}: an element of a keyed list must be an object, not {item!r}")
    found: dict[str, Any] = {}
    for key in keys:
        if key in item:
            found[key] = item[key]
        elif key in defaults:
            found[key] = defaults[key]
        else:
            raise Invalid(
                f"{where}: associative list with keys has an element that omits key field "
                f'"{key}" (and doesn\'t have default value)'
            )
    return key_element(found)


class BuiltinShape:
    """Built-in kinds, by field name (see the module docstring)."""

    __slots__ = ("_name",)

    def __init__(self, name: str = "") -> None:
        self._name = name

    @property
    def atomic_map(self) -> bool:
        return self._name in _ATOMIC_MAPS

    @property
    def list_kind(self) -> ListKind:
        if self._name in _SET_LISTS:
            return "set"
        if self._name in KEYED_LISTS or self._name == "ports":
            return "map"
        return "atomic"

    def child(self, name: str) -> Shape:
        return BuiltinShape(name)

    def item(self) -> Shape:
        return _ITEM

    def declares(self, name: str) -> bool:
        return True

    def element(self, item: Any) -> PathElement:
        if self._name in _SET_LISTS:
            return value_element(item)
        if self._name == "ports":
            first = (
                "containerPort" if isinstance(item, Mapping) and "containerPort" in item else "port"
            )
            return _keyed_element(item, (first, "protocol"), _PORT_KEY_DEFAULTS, self._name)
        return _keyed_element(item, KEYED_LISTS[self._name], {}, self._name)


_ITEM: Final = BuiltinShape()
_METADATA: Final = BuiltinShape("metadata")


class SchemaShape:
    """A CustomResourceDefinition's structural schema (see the module docstring). An empty
    schema - a field the schema does not describe - is free-form: atomic lists, maps merged
    by key, nothing declared."""

    __slots__ = ("_root", "_schema")

    def __init__(self, schema: Mapping[str, Any] | None, *, root: bool = True) -> None:
        self._schema: Mapping[str, Any] = schema or {}
        self._root = root

    @property
    def atomic_map(self) -> bool:
        return self._schema.get("x-kubernetes-map-type") == "atomic"

    @property
    def list_kind(self) -> ListKind:
        kind = self._schema.get("x-kubernetes-list-type")
        return kind if kind in ("set", "map") else "atomic"

    def _properties(self) -> Mapping[str, Any]:
        properties = self._schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}

    def child(self, name: str) -> Shape:
        if self._root and name == "metadata":
            return _METADATA
        schema = self._properties().get(name)
        if schema is None:
            additional = self._schema.get("additionalProperties")
            schema = additional if isinstance(additional, Mapping) else None
        return SchemaShape(schema if isinstance(schema, Mapping) else None, root=False)

    def item(self) -> Shape:
        items = self._schema.get("items")
        return SchemaShape(items if isinstance(items, Mapping) else None, root=False)

    def declares(self, name: str) -> bool:
        return name in self._properties() or (self._root and name == "metadata")

    def element(self, item: Any) -> PathElement:
        if self.list_kind == "set":
            return value_element(item)
        keys = tuple(self._schema.get("x-kubernetes-list-map-keys") or ())
        items = self._schema.get("items")
        properties = items.get("properties") if isinstance(items, Mapping) else None
        defaults = {
            key: schema["default"]
            for key, schema in (properties or {}).items()
            if key in keys and isinstance(schema, Mapping) and "default" in schema
        }
        return _keyed_element(item, keys, defaults, "list")
