"""Field paths and field sets of server-side apply, in the API server's ``fieldsV1`` format
(structured-merge-diff's ``fieldpath`` package).

A path element is kept as the string ``fieldsV1`` writes for it:

- ``f:<name>``: a field of a map (``f:spec``);
- ``k:<json>``: an element of a keyed list, named by its key fields sorted by name
  (``k:{"containerPort":80,"protocol":"TCP"}``);
- ``v:<json>``: an element of a set list, named by its value (``v:"example.com/cleanup"``);
- ``i:<n>``: an element by index (read, never produced here).

A :data:`Path` is a tuple of elements and a :data:`FieldSet` a frozenset of paths, the
set's *members*. ``fieldsV1`` nests the same paths as a tree of objects: ``{}`` for a member
with nothing below it, ``"."`` marking a member that also has members below it::

    {"f:data": {".": {}, "f:k": {}}}      # members .data and .data.k

Elements sort as the server sorts them (fields, then keys, then values, then indexes), so
:func:`encode_fields_v1` writes the bytes the server would.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from kcontrol.client import FieldsV1

__all__ = [
    "FieldSet",
    "Path",
    "PathElement",
    "Trie",
    "decode_fields_v1",
    "describe",
    "encode_fields_v1",
    "field",
    "iterate",
    "key_element",
    "trie",
    "value_element",
]

PathElement = str
Path = tuple[PathElement, ...]
FieldSet = frozenset[Path]

Trie = dict[PathElement, "tuple[bool, Trie]"]
"""A field set as a tree: each element maps to (is it a member, the members below it)."""


def field(name: str) -> PathElement:
    return "f:" + name


def key_element(keys: Mapping[str, Any]) -> PathElement:
    """The element of a keyed-list item whose key fields are ``keys``."""
    return "k:" + _json({name: keys[name] for name in sorted(keys)})


def value_element(value: Any) -> PathElement:
    """The element of a set-list item."""
    return "v:" + _json(value)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


# -- the server's order ------------------------------------------------------------------


def _value_order(value: Any) -> tuple[Any, ...]:
    """structured-merge-diff's total order of values: numbers, strings, booleans, lists,
    maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(value[k])) for k in sorted(value)))
    return (5,)


@functools.lru_cache(maxsize=4096)
def _order(element: PathElement) -> tuple[Any, ...]:
    kind, text = element[:2], element[2:]
    if kind == "f:":
        return (0, text)
    if kind == "k:":
        keys = orjson.loads(text)
        return (1, tuple((name, _value_order(keys[name])) for name in sorted(keys)))
    if kind == "v:":
        return (2, _value_order(orjson.loads(text)))
    if kind == "i:":
        return (3, int(text))
    return (4, text)


def _sorted(elements: Iterable[PathElement]) -> list[PathElement]:
    return sorted(elements, key=_order)


# -- trees ---------------------------------------------------------------------------------


def trie(paths: Iterable[Path]) -> Trie:
    """The tree of ``paths``."""
    root: Trie = {}
    for path in paths:
        node = root
        for depth, element in enumerate(path):
            member, children = node.get(element, (False, {}))
            last = depth == len(path) - 1
            node[element] = (member or last, children)
            node = children
    return root


def iterate(paths: Iterable[Path]) -> Iterator[Path]:
    """``paths`` in the order the server lists them in messages: at each level the members
    first, then what lies below each element, elements in the server's order."""
    yield from _iterate(trie(paths), ())


def _iterate(node: Trie, prefix: Path) -> Iterator[Path]:
    ordered = _sorted(node)
    for element in ordered:
        if node[element][0]:
            yield (*prefix, element)
    for element in ordered:
        yield from _iterate(node[element][1], (*prefix, element))


def describe(path: Path) -> str:
    """The path as the server prints it: ``.spec.containers[name="web"].image``."""
    parts = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            parts.append("." + text)
        elif kind == "k:":
            keys = orjson.loads(text)
            parts.append("[" + ",".join(f"{k}={_show(keys[k])}" for k in sorted(keys)) + "]")
        elif kind == "v:":
            parts.append(f"[={_show(orjson.loads(text))}]")
        else:
            parts.append(f"[{text}]")
    return "".join(parts)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return _json(value) if isinstance(value, str) else str(value)


# -- fieldsV1 ------------------------------------------------------------------------------


def encode_fields_v1(paths: Iterable[Path]) -> FieldsV1:
    """The ``fieldsV1`` bytes of a field set, ordered as the server writes them."""
    return FieldsV1(orjson.dumps(_tree(trie(paths))))


def _tree(node: Trie) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in _sorted(node):
        member, children = node[element]
        if not children:
            out[element] = {}
            continue
        below = _tree(children)
        out[element] = {".": {}, **below} if member else below
    return out


def decode_fields_v1(raw: Any) -> FieldSet:
    """The field set of a ``fieldsV1`` value: :class:`~kcontrol.client.FieldsV1` or other
    bytes, a JSON string, or the decoded object. Keys are normalized (``k:`` key fields
    re-sorted), unknown element kinds skipped, as the server does. ValueError if it is not
    a JSON object."""
    if isinstance(raw, str):
        raw = orjson.loads(raw)
    elif isinstance(raw, bytes | bytearray | memoryview):
        raw = orjson.loads(memoryview(raw))  # orjson takes no bytes subclass (FieldsV1)
    if not isinstance(raw, Mapping):
        raise ValueError(f"fieldsV1 must be a JSON object, not {type(raw).__name__}")
    paths: set[Path] = set()
    _collect(raw, (), paths)
    return frozenset(paths)


def _collect(node: Mapping[str, Any], prefix: Path, out: set[Path]) -> None:
    for text, below in node.items():
        if text == ".":
            if prefix:
                out.add(prefix)
            continue
        element = _normalize(text)
        if element is None:
            continue
        path = (*prefix, element)
        if isinstance(below, Mapping) and below:
            _collect(below, path, out)
        else:
            out.add(path)


def _normalize(text: str) -> PathElement | None:
    kind = text[:2]
    if kind == "f:":
        return text
    if kind == "k:":
        keys = orjson.loads(text[2:])
        return key_element(keys) if isinstance(keys, dict) else None
    if kind == "v:":
        return value_element(orjson.loads(text[2:]))
    if kind == "i:":
        return text
    return None
