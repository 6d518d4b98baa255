"""Lazy re-exports for the controller packages' ``__init__`` (PEP 562).

kcontrol-manager loads every controller's ``SPEC`` at start, enabled or not (it accepts every
controller's flags, as kube-controller-manager does), so a package's ``__init__`` imports only
what ``SPEC`` needs - ``_names`` and ``_factory``, whose factory imports the controller when
the manager builds it - and binds the rest of its ``__all__`` (the controller, helpers) on
first access, through the module ``__getattr__`` :func:`lazy_exports` makes. Type checkers
see those names through the same imports under ``if TYPE_CHECKING:``::

    if TYPE_CHECKING:
        from ._controller import JobController
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {"._controller": ["JobController"]})
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: ``exports`` maps each of its
    submodules (relative: ``"._controller"``) to the names ``package`` exports from it,
    imported on first access and then bound in ``package`` (later accesses skip this)."""
    modules = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *modules})

    return __getattr__, __dir__
