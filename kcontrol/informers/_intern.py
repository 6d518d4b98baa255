"""Sharing equal short strings between cached objects (``sys.intern``).

A JSON decoder creates a new ``str`` for every value it reads, so 50,000 cached pods hold
50,000 copies of ``"TCP"``, of each image name, label value and quantity. Interning them as
objects arrive leaves one copy of each; the objects' values are unchanged (``str`` is
immutable), only their identity is shared. Measured in ``bench/informer.py`` (Pending pods,
3.9 KB of JSON each): about 3.3 KB less memory per cached pod, for about 10 us of CPU per
object received. Reflectors do it by default (``ReflectorOptions.intern_strings``).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["INTERN_MAX_LENGTH", "intern_strings"]

INTERN_MAX_LENGTH = 64
"""Longer string values are left alone: they rarely repeat (uids, timestamps repeat little
either, but telling them apart costs more than interning them)."""


def intern_strings(obj: dict[str, Any]) -> dict[str, Any]:
    """Replace every string value of at most :data:`INTERN_MAX_LENGTH` characters in
    ``obj`` (recursively) by its interned copy; returns ``obj``, changed in place. Keys need
    nothing: the JSON decoder already shares them. Idempotent."""
    _intern_container(obj)
    return obj


def _intern_container(container: dict[str, Any] | list[Any]) -> None:
    intern, limit = sys.intern, INTERN_MAX_LENGTH
    pairs = container.items() if type(container) is dict else enumerate(container)
    for key, value in pairs:
        kind = type(value)
        if kind is str:
            if len(value) <= limit:
                container[key] = intern(value)  # type: ignore[index]
        elif kind is dict or kind is list:
            _intern_container(value)
