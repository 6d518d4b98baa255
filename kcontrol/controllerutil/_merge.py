"""The JSON merge patch (RFC 7386) that turns one object into another, and JSON equality.

:func:`merge_patch` is what controller-runtime's ``client.MergeFrom`` computes: for two JSON
objects, a patch holding only what differs - changed and added members with their new
values, removed members as ``null``, nested objects diffed member by member. Arrays are
atomic in a merge patch: a changed array is sent whole. Applying the patch to ``before``
(``kubectl patch --type merge``, the API server's ``application/merge-patch+json``) yields
``after`` - except that a member cannot be *set* to ``null``, only removed.

Values are compared as JSON compares them (:func:`json_equal`): ``1`` and ``1.0`` are the same
number, but ``True`` is not ``1`` (Python's ``==`` says it is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kcontrol.client import deep_copy

__all__ = ["holds_fields", "json_equal", "merge_patch"]


def merge_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 merge patch from ``before`` to ``after`` (two JSON objects); ``{}`` when
    they do not differ. The patch shares nothing with ``after``: its values are copies.

    A member that is ``null`` on one side and missing on the other is no difference: a merge
    patch cannot tell the two apart, and the API server stores neither.
    """
    patch: dict[str, Any] = {}
    for key, old in before.items():
        if key not in after and old is not None:
            patch[key] = None
    for key, new in after.items():
        old = before.get(key)
        if new is None:
            if old is not None:
                patch[key] = None
        elif old is None:
            patch[key] = deep_copy(new)
        elif isinstance(old, Mapping) and isinstance(new, Mapping):
            nested = merge_patch(old, new)
            if nested:
                patch[key] = nested
        elif not json_equal(old, new):
            patch[key] = deep_copy(new)
    return patch


def json_equal(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values are equal as JSON: objects by members, arrays element
    by element, numbers by value, booleans only to booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping):
        return (
            isinstance(b, Mapping)
            and a.keys() == b.keys()
            and all(json_equal(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)


def holds_fields(current: Any, fields: Any) -> bool:
    """Whether ``current`` already holds every field of ``fields`` with the same value.

    Objects: every member of ``fields`` is in ``current`` and holds there (members only
    ``current`` has - defaults the server filled in, other writers' fields - do not matter);
    arrays: the same length, element by element; anything else by :func:`json_equal`. So a
    server-side apply of ``fields`` to ``current`` would change nothing the applier sets: what
    :func:`~kcontrol.controllerutil.apply` checks with a ``reader`` before sending anything.
    """
    if isinstance(fields, Mapping):
        return isinstance(current, Mapping) and all(
            key in current and holds_fields(current[key], value) for key, value in fields.items()
        )
    if isinstance(fields, list):
        return (
            isinstance(current, list)
            and len(current) == len(fields)
            and all(holds_fields(c, f) for c, f in zip(current, fields, strict=True))
        )
    return json_equal(current, fields)
