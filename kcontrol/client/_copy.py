"""Deep copies of decoded objects: what a controller does before changing a cached object.

Objects are decoded JSON - dicts, lists, strings, numbers, booleans, ``None`` and the raw field
sets (:class:`~kcontrol.client.FieldsV1`, immutable) - so a copy needs no ``copy.deepcopy``
machinery (its memo of every object seen, its dispatch through ``__deepcopy__`` and
``__reduce_ex__``): walking the dicts and lists is all it takes, and a sync copies the object
it works on every time it runs (client-go's generated ``DeepCopy`` is the same idea; the time
it saves, measured: docs/benchmarks.md).
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypeVar

from kcontrol.client._fields import FieldsV1

__all__ = ["deep_copy"]

_T = TypeVar("_T")

_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None), bytes, FieldsV1})


def deep_copy(obj: _T) -> _T:
    """A deep copy of ``obj``, a decoded object or any part of one.

    Plain dicts and lists are copied level by level; strings, numbers, booleans, ``None``,
    bytes and :class:`~kcontrol.client.FieldsV1` are immutable and shared with the original;
    anything else is handed to ``copy.deepcopy``. Unlike ``copy.deepcopy``, a dict or list
    that appears twice in ``obj`` is copied twice (decoded JSON never shares one), and a
    structure that contains itself is not supported.
    """
    result: _T = _copy_value(obj)
    return result


def _copy_value(value: Any) -> Any:
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return _copy_dict(value)
    if kind is list:
        return [_copy_value(item) for item in value]
    return copy.deepcopy(value)


def _copy_dict(source: dict[Any, Any]) -> dict[Any, Any]:
    # Leaves (most values) are kept without a call; containers recurse.
    return {
        key: value if type(value) in _IMMUTABLE else _copy_value(value)
        for key, value in source.items()
    }
