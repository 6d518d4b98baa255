"""The JSON Patch (RFC 6902) that turns one JSON document into another: what a mutating
webhook answers with once its defaulter has changed a copy of the object.

:func:`json_patch` walks both documents: an object member that is new is ``add``ed, one that
is gone ``remove``d, one whose value changed is patched recursively when both values are
objects and ``replace``d otherwise - arrays included, whole (the API server applies the
patch to the object it sent, so a whole-array replace is exact; element-wise moves would only
make the patch shorter). Member names are escaped in the JSON Pointer (``~`` as ``~0``,
``/`` as ``~1``: a label key such as ``app.kubernetes.io/name``). Values in the patch are
copies. Numbers compare by value and never equal booleans (``1`` is not ``true``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import deep_copy
from kcontrol.controllerutil._merge import json_equal

__all__ = ["json_patch", "pointer"]


def pointer(*tokens: str) -> str:
    """The JSON Pointer (RFC 6901) of ``tokens``: ``pointer("metadata", "labels", "a/b")`` is
    ``/metadata/labels/a~1b``."""
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


def json_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The operations that make ``before`` into ``after`` (module docstring); ``[]`` when they
    are equal."""
    operations: list[dict[str, Any]] = []
    _diff(before, after, (), operations)
    return operations


def _diff(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    path: tuple[str, ...],
    out: list[dict[str, Any]],
) -> None:
    for key in before:
        if key not in after:
            out.append({"op": "remove", "path": pointer(*path, key)})
    for key, new in after.items():
        if key not in before:
            out.append({"op": "add", "path": pointer(*path, key), "value": deep_copy(new)})
            continue
        old = before[key]
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            _diff(old, new, (*path, key), out)
        elif not json_equal(old, new):
            out.append({"op": "replace", "path": pointer(*path, key), "value": deep_copy(new)})
