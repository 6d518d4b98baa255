"""The value operations of server-side apply over plain-dict objects and a :class:`Shape`
(structured-merge-diff's ``typed`` package): the field set of a value, the comparison of two
values, the merge of an applied configuration into an object, and the removal of fields.

All functions are pure: inputs are never modified, results share no mutable parts with
them (scalars aside).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from kcontrol.controllerutil._merge import json_equal
from kcontrol.errors import Invalid
from kcontrol.testing.fake._ssa._fieldpath import FieldSet, Path, PathElement, Trie, trie
from kcontrol.testing.fake._ssa._fieldpath import field as field_element
from kcontrol.testing.fake._ssa._shape import Shape

__all__ = [
    "MISSING",
    "Comparison",
    "compare",
    "ensure_named_fields",
    "field_set",
    "merge",
    "remove_fields",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: Any) -> _Missing:
        return self


MISSING: Final = _Missing()
"""An absent value (``None`` is JSON null)."""


# -- field sets ----------------------------------------------------------------------------


def field_set(obj: Any, shape: Shape) -> FieldSet:
    """The fields ``obj`` sets, as an applied configuration owns them: every scalar, atomic
    list and atomic map; every item of a set or keyed list (and what it sets); empty maps and
    nulls; and the keys of free-form maps."""
    out: set[Path] = set()
    _field_set(obj, shape, (), out)
    return frozenset(out)


def _field_set(value: Any, shape: Shape, path: Path, out: set[Path]) -> None:
    if isinstance(value, dict):
        if shape.atomic_map:
            out.add(path)
            return
        for name, child in value.items():
            child_path = (*path, field_element(name))
            _field_set(child, shape.child(name), child_path, out)
            if child is None or child == {} or not shape.declares(name):
                out.add(child_path)
    elif isinstance(value, list):
        if shape.list_kind == "atomic":
            out.add(path)
            return
        item_shape = shape.item()
        seen: set[PathElement] = set()
        for item in value:
            element = shape.element(item)
            if element in seen:
                raise Invalid(f"duplicate entries for key {element[2:]} in the applied list")
            seen.add(element)
            _field_set(item, item_shape, (*path, element), out)
            out.add((*path, element))
    else:
        out.add(path)


# -- comparison ----------------------------------------------------------------------------


@dataclass
class Comparison:
    """What changed between two values, as paths."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def restrict(self, keep: Callable[[Path], bool]) -> Comparison:
        """Only the paths ``keep(path)`` accepts."""
        return Comparison(
            {p for p in self.added if keep(p)},
            {p for p in self.modified if keep(p)},
            {p for p in self.removed if keep(p)},
        )


def compare(old: Any, new: Any, shape: Shape) -> Comparison:
    """The paths added, modified and removed from ``old`` to ``new``. A map or list that
    appears or disappears is itself added or removed, besides what it holds; an atomic
    value, or a map or list empty on both sides, counts as one leaf."""
    result = Comparison()
    _compare(old, new, shape, (), result)
    return result


def _compare(old: Any, new: Any, shape: Shape, path: Path, out: Comparison) -> None:
    old_is = _container(old)
    new_is = _container(new)
    kind = old_is if new is MISSING else new_is
    if old is not MISSING and new is not MISSING and old_is != new_is:
        kind = ""
    if kind == "map" and not shape.atomic_map and not (_empty(old) and _empty(new)):
        old_map = old if isinstance(old, dict) else {}
        new_map = new if isinstance(new, dict) else {}
        for name in {**old_map, **new_map}:
            _compare(
                old_map.get(name, MISSING),
                new_map.get(name, MISSING),
                shape.child(name),
                (*path, field_element(name)),
                out,
            )
    elif kind == "list" and shape.list_kind != "atomic" and not (_empty(old) and _empty(new)):
        _compare_items(old, new, shape, path, out)
    else:
        _compare_leaf(old, new, path, out)
        return
    if old is MISSING:
        out.added.add(path)
    elif new is MISSING:
        out.removed.add(path)


def _compare_leaf(old: Any, new: Any, path: Path, out: Comparison) -> None:
    if old is MISSING:
        out.added.add(path)
    elif new is MISSING:
        out.removed.add(path)
    elif not json_equal(old, new):
        out.modified.add(path)


def _compare_items(old: Any, new: Any, shape: Shape, path: Path, out: Comparison) -> None:
    old_items = _index(old if isinstance(old, list) else [], shape)
    new_items = _index(new if isinstance(new, list) else [], shape)
    item_shape = shape.item()
    for element in {**old_items, **new_items}:
        before, after = old_items.get(element, []), new_items.get(element, [])
        item_path = (*path, element)
        if len(before) <= 1 and len(after) <= 1:
            _compare(
                before[0] if before else MISSING,
                after[0] if after else MISSING,
                item_shape,
                item_path,
                out,
            )
        elif len(before) >= 2 and len(after) >= 2:
            if not json_equal(before, after):
                out.modified.add(item_path)
        elif len(before) >= 2:
            if after:
                _compare(MISSING, after[0], item_shape, item_path, out)
            out.removed.add(item_path)
        else:
            if before:
                _compare(before[0], MISSING, item_shape, item_path, out)
            out.added.add(item_path)


def _index(items: list[Any], shape: Shape) -> dict[PathElement, list[Any]]:
    """The items of a set or keyed list by element, in first-seen order."""
    out: dict[PathElement, list[Any]] = {}
    for item in items:
        out.setdefault(shape.element(item), []).append(item)
    return out


def _container(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return ""


def _empty(value: Any) -> bool:
    return value is MISSING or (isinstance(value, dict | list) and not value)


# -- merge ---------------------------------------------------------------------------------


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live``: maps key by key, sets and keyed lists item by item
    (live items keep their place, new ones come where ``config`` puts them), everything
    else - scalars, atomic lists and maps - replaced by ``config``'s value. A null in
    ``config`` removes the field."""
    return _merge(live, config, shape)


def _merge(live: Any, config: Any, shape: Shape) -> Any:
    if config is MISSING:
        return copy.deepcopy(live)
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic_map:
        out: dict[str, Any] = {}
        for name in {**live, **config}:
            value = _merge(live.get(name, MISSING), config.get(name, MISSING), shape.child(name))
            if value is not None and value is not MISSING:
                out[name] = value
        return out
    if isinstance(config, dict) and not shape.atomic_map:
        return _merge({}, config, shape)
    if isinstance(config, list) and shape.list_kind != "atomic":
        # An empty list merges too: it keeps the live items.
        return _merge_items(live if isinstance(live, list) else [], config, shape)
    return copy.deepcopy(config)


def _merge_items(live: list[Any], config: list[Any], shape: Shape) -> list[Any]:
    """structured-merge-diff's list merge: live order kept, config's new items inserted
    after the shared item that precedes them in config."""
    item_shape = shape.item()
    config_elements = [shape.element(item) for item in config]
    config_items: dict[PathElement, Any] = {}
    for element, item in zip(config_elements, config, strict=True):
        if element in config_items:
            raise Invalid(f"duplicate entries for key {element[2:]} in the applied list")
        config_items[element] = item
    live_elements = [shape.element(item) for item in live]
    live_items: dict[PathElement, Any] = {}
    for element, item in zip(live_elements, live, strict=True):
        live_items[element] = None if element in live_items else item
    shared = [e for e in config_elements if e in live_items]
    out: list[Any] = []
    merged: set[PathElement] = set()

    def emit(element: PathElement, old: Any, new: Any) -> None:
        value = _merge(MISSING if old is None else old, new, item_shape)
        if value is not MISSING and value is not None:
            out.append(value)

    li = ri = 0
    next_shared = shared.pop(0) if shared else None
    while li < len(live_elements) or ri < len(config_elements):
        if li < len(live_elements) and ri < len(config_elements):
            element = live_elements[li]
            if element == config_elements[ri]:
                merged.add(element)
                emit(element, live_items[element], config_items[element])
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in config_items and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(live_elements):
            element = live_elements[li]
            if element not in config_items:
                emit(element, live[li], MISSING)
                li += 1
                continue
            if element in merged:
                li += 1
        if ri < len(config_elements):
            element = config_elements[ri]
            merged.add(element)
            emit(element, live_items.get(element), config_items[element])
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out


# -- removal -------------------------------------------------------------------------------


def remove_fields(obj: Any, paths: Iterable[Path], shape: Shape) -> Any:
    """``obj`` without the members of ``paths`` (a member map or list goes with all it
    holds); maps and lists left empty by the removal go too."""
    result = _remove(obj, trie(paths), shape)
    return {} if result is MISSING else result


def _remove(value: Any, node: Trie, shape: Shape) -> Any:
    if isinstance(value, dict):
        if not value or shape.atomic_map:
            return MISSING
        out: dict[str, Any] = {}
        for name, child in value.items():
            element = field_element(name)
            member, below = node.get(element, (False, {}))
            if member:
                continue
            kept = _remove(child, below, shape.child(name)) if below else copy.deepcopy(child)
            if kept is not MISSING:
                out[name] = kept
        return out or MISSING
    if isinstance(value, list):
        if not value or shape.list_kind == "atomic":
            return MISSING
        items: list[Any] = []
        for item in value:
            member, below = node.get(shape.element(item), (False, {}))
            if member:
                continue
            kept = _remove(item, below, shape.item()) if below else copy.deepcopy(item)
            if kept is not MISSING:
                items.append(kept)
        return items or MISSING
    return value


def ensure_named_fields(paths: Collection[Path], shape: Shape) -> FieldSet:
    """``paths`` plus every declared field that has members below it: owning
    ``.spec.replicas`` also owns the field ``.spec``, but owning ``.data.key`` of a
    free-form map does not own ``.data``... unless ``data`` is declared."""
    out: set[Path] = set(paths)
    _named(trie(paths), shape, (), out)
    return frozenset(out)


def _named(node: Trie, shape: Shape, prefix: Path, out: set[Path]) -> None:
    for element, (_, below) in node.items():
        if not below:
            continue
        path = (*prefix, element)
        if element.startswith("f:"):
            name = element[2:]
            if shape.declares(name):
                out.add(path)
            _named(below, shape.child(name), path, out)
        else:
            _named(below, shape.item(), path, out)
