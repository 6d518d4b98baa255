"""Sharing equal strings between cached objects (``sys.intern``).

A JSON decoder creates a new ``str`` for every value it reads, so 50,000 cached pods hold
50,000 copies of ``"TCP"``, of each image name, label value and quantity. Interning them as
objects arrive leaves one copy of each; the objects' values are unchanged (``str`` is
immutable), only their identity is shared. Interned strings are freed like any other once
nothing refers to them. Reflectors do it by default (``ReflectorOptions.intern_strings``);
the cost and the saving, measured by ``bench/informer/``, are in docs/benchmarks.md.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["intern_strings"]


def intern_strings(obj: dict[str, Any]) -> dict[str, Any]:
    """Replace every string value in ``obj`` (recursively) by its interned copy; returns
    ``obj``, changed in place. Keys need nothing: the JSON decoder already shares them.
    Idempotent."""
    _intern_dict(obj)
    return obj


# Two walkers instead of one generic one, and no length limit: each check per value costs
# more here than interning a value that will not repeat (a uid, a timestamp).


def _intern_dict(container: dict[str, Any], intern: Any = sys.intern) -> None:
    for key, value in container.items():
        kind = type(value)
        if kind is str:
            container[key] = intern(value)
        elif kind is dict:
            _intern_dict(value)
        elif kind is list:
            _intern_list(value)


def _intern_list(container: list[Any], intern: Any = sys.intern) -> None:
    for index, value in enumerate(container):
        kind = type(value)
        if kind is dict:
            _intern_dict(value)
        elif kind is str:
            container[index] = intern(value)
        elif kind is list:
            _intern_list(value)
