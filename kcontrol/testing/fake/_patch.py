"""Applying PATCH bodies to plain-dict objects, as the fake API server does.

- JSON merge patch (RFC 7386, :attr:`PatchType.MERGE`): complete.
- JSON patch (RFC 6902, :attr:`PatchType.JSON`): complete (add, remove, replace, move, copy,
  test). A malformed document is a 400 :class:`BadRequest`; an operation that cannot be
  applied (missing path, failed ``test``) is a 422 :class:`Invalid`, as the real server answers.
- Strategic merge patch (:attr:`PatchType.STRATEGIC`): a *subset*. The real server merges by the
  Go struct tags of each type; here merge behaviour is chosen by **field name alone**, wherever
  the field sits:

  * lists of objects named in :data:`MERGE_KEYS` merge element-wise by that key
    (``ownerReferences`` by ``uid``, ``containers``/``env``/``volumes``... by ``name``,
    ``conditions`` by ``type``), and honour ``{"$patch": "delete", <key>: ...}`` elements and a
    ``{"$patch": "replace"}`` element;
  * ``finalizers`` merges as a set of strings, and ``$deleteFromPrimitiveList/<field>``
    removes values from such a list;
  * ``{"$patch": "replace"}`` / ``{"$patch": "delete"}`` inside a map, ``$retainKeys`` and
    ``null`` (delete the key) work as upstream; ``$setElementOrder/<field>`` is accepted and
    ignored;
  * every other list is replaced wholesale, as in a merge patch.

- Server-side apply (:attr:`PatchType.APPLY`) is not a patch of this module: the tracker
  serves it with field ownership (:mod:`kcontrol.testing.fake._ssa`); :func:`apply_patch`
  refuses it with a 415 ``UnsupportedMediaType`` :class:`ApiError`.

The functions may modify and reuse ``target``: callers pass a private copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from kcontrol.client import Object, PatchType
from kcontrol.client._decode import decode_json, encode_json
from kcontrol.controllerutil._merge import json_equal
from kcontrol.errors import ApiError, BadRequest, Invalid

__all__ = [
    "MERGE_KEYS",
    "apply_patch",
    "json_merge_patch",
    "json_patch",
    "strategic_merge_patch",
]

MERGE_KEYS: Final[Mapping[str, str]] = {
    "ownerReferences": "uid",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "conditions": "type",
}
"""List fields a strategic merge patch merges element-wise, and the key elements merge by."""

SET_LISTS: Final = frozenset({"finalizers"})
"""Lists of strings a strategic merge patch merges as sets."""

_DIRECTIVE = "$patch"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ELEMENT_ORDER = "$setElementOrder/"
_RETAIN_KEYS = "$retainKeys"


def decode_patch(patch: Any) -> Any:
    """The patch as fresh JSON values: ``str``/``bytes`` are parsed, anything else is copied
    (so applying it never aliases the caller's data). Undecodable input is a BadRequest."""
    try:
        if isinstance(patch, str | bytes | bytearray | memoryview):
            return orjson.loads(patch)
        return decode_json(encode_json(patch))
    except (orjson.JSONDecodeError, TypeError) as err:
        raise BadRequest(f"the patch is not valid JSON: {err}") from None


def apply_patch(target: Object, patch: Any, patch_type: PatchType) -> Object:
    """``target`` with ``patch`` applied; ``patch`` may be JSON text or decoded JSON."""
    patch_type = PatchType(patch_type)
    if patch_type is PatchType.APPLY:
        raise ApiError(
            "server-side apply is not supported by the fake client",
            code=415,
            reason="UnsupportedMediaType",
        )
    body = decode_patch(patch)
    if patch_type is PatchType.JSON:
        if not isinstance(body, list):
            raise BadRequest("a JSON patch must be a list of operations")
        result: Any = json_patch(target, body)
    else:
        if not isinstance(body, dict):
            raise BadRequest(f"a {patch_type.name.lower()} patch must be a JSON object")
        if patch_type is PatchType.MERGE:
            result = json_merge_patch(target, body)
        else:
            result = strategic_merge_patch(target, body)
    if not isinstance(result, dict):
        raise BadRequest("the patched document is not an object")
    return result


# -- RFC 7386 ----------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = json_merge_patch(target.get(key), value)
    return target


# -- RFC 6902 ----------------------------------------------------------------------------------


def json_patch(document: Any, operations: list[Any]) -> Any:
    """RFC 6902: apply ``operations`` in order; all or nothing for the caller's purposes
    (on failure the partly patched ``document`` must be discarded)."""
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("path"), str):
            raise BadRequest(f"a JSON patch operation needs an 'op' and a 'path': {operation!r}")
        op, path = operation.get("op"), operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise BadRequest(f"JSON patch operation {op!r} on {path!r} needs a 'value'")
        if op in ("move", "copy") and not isinstance(operation.get("from"), str):
            raise BadRequest(f"JSON patch operation {op!r} on {path!r} needs a 'from'")
        if op == "add":
            document = _add(document, _pointer(path), operation["value"])
        elif op == "remove":
            document = _remove(document, _pointer(path))[0]
        elif op == "replace":
            document = _replace(document, _pointer(path), operation["value"])
        elif op == "move":
            source, tokens = _pointer(operation["from"]), _pointer(path)
            if tokens[: len(source)] == source and len(tokens) > len(source):
                raise Invalid(f"cannot move {operation['from']!r} into its own child {path!r}")
            document, value = _remove(document, source)
            document = _add(document, tokens, value)
        elif op == "copy":
            value = decode_json(encode_json(_get(document, _pointer(operation["from"]))))
            document = _add(document, _pointer(path), value)
        elif op == "test":
            actual = _get(document, _pointer(path))
            if not json_equal(actual, operation["value"]):
                raise Invalid(f"testing value {path!r} failed")
        else:
            raise Invalid(f"unexpected JSON patch operation {op!r}")
    return document


def _pointer(path: str) -> list[str]:
    """RFC 6901 reference tokens of ``path`` (``""`` is the whole document)."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise Invalid(f"JSON pointer {path!r} must be empty or start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_insert: bool = False) -> int:
    if for_insert and token == "-":
        return len(container)
    limit = len(container) if for_insert else len(container) - 1
    if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) > limit:
        raise Invalid(f"array index {token!r} is out of range or malformed")
    return int(token)


def _get(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                raise Invalid(f"path /{'/'.join(tokens)} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token)]
        else:
            raise Invalid(f"path /{'/'.join(tokens)} does not exist")
    return node


def _add(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _get(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_insert=True), value)
    else:
        raise Invalid(f"cannot add to /{'/'.join(tokens)}: parent is not a container")
    return document


def _replace(document: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _get(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
    elif isinstance(parent, list):
        parent[_index(parent, last)] = value
    else:
        raise Invalid(f"cannot replace /{'/'.join(tokens)}: it does not exist")
    return document


def _remove(document: Any, tokens: list[str]) -> tuple[Any, Any]:
    """The document without the value at ``tokens``, and that value."""
    if not tokens:
        return None, document
    parent = _get(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise Invalid(f"cannot remove /{'/'.join(tokens)}: it does not exist")
        return document, parent.pop(last)
    if isinstance(parent, list):
        return document, parent.pop(_index(parent, last))
    raise Invalid(f"cannot remove /{'/'.join(tokens)}: parent is not a container")


# -- strategic merge (subset) ---------------------------------------------------------------


def strategic_merge_patch(target: Any, patch: dict[str, Any]) -> Any:
    """Merge ``patch`` into the map ``target``; see the module docstring for the subset.

    Returns ``None`` when the patch says ``{"$patch": "delete"}`` for the whole map.
    """
    directive = patch.get(_DIRECTIVE, "merge")
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != _DIRECTIVE})
    if directive != "merge":
        raise BadRequest(f"unknown strategic merge patch directive {directive!r}")
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            current = target.get(field)
            if isinstance(current, list) and isinstance(value, list):
                target[field] = [v for v in current if v not in value]
    for key, value in patch.items():
        if _is_directive_key(key):
            continue
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(target.get(key), value)
            if merged is None:
                target.pop(key, None)
            else:
                target[key] = merged
        elif isinstance(value, list):
            target[key] = _merge_list(key, target.get(key), value)
        else:
            target[key] = value
    retain = patch.get(_RETAIN_KEYS)
    if isinstance(retain, list):
        target = {k: v for k, v in target.items() if k in retain}
    return target


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    if field in SET_LISTS:
        base = current if isinstance(current, list) else []
        return base + [v for i, v in enumerate(patch) if v not in base and v not in patch[:i]]
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None or any(_is_directive(item, "replace") for item in patch):
        return [_strip_directives(i) for i in patch if not _is_directive(i, "replace")]
    result = list(current) if isinstance(current, list) else []
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise BadRequest(f"an element of {field!r} lacks its merge key {merge_key!r}")
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if _is_directive(item, "delete"):
            result = [
                e
                for e in result
                if not (isinstance(e, dict) and e.get(merge_key) == item[merge_key])
            ]
        elif position is None:
            result.append(strategic_merge_patch({}, item))
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result


def _is_directive(item: Any, directive: str) -> bool:
    return isinstance(item, dict) and item.get(_DIRECTIVE) == directive


def _is_directive_key(key: str) -> bool:
    return key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith((_DELETE_FROM, _ELEMENT_ORDER))


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not _is_directive_key(k)}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value
