"""Editable installs only: ``import kcontrol_controllers`` loads the repository's controllers/.

The wheel installs the directory controllers/ as the package ``kcontrol_controllers`` (hatchling's
``sources`` rewrite). hatchling refuses an editable install of a rewrite that renames rather than
strips a path prefix, in both of its modes (the ``.pth`` of package parents, and the import hook
of ``dev-mode-exact``), and ``force-include`` would copy the files into site-packages, frozen at
install time. So pyproject.toml's ``dev-mode-dirs`` puts the repository root (for ``kcontrol``)
and this directory on ``sys.path``, and this module, found as ``kcontrol_controllers``, replaces
itself in ``sys.modules`` with controllers/__init__.py loaded under the same name (editables'
"self-replace" technique): its ``__path__`` is controllers/, so every submodule
(``kcontrol_controllers.deployment``, ...) is the source file itself, edited in place.

Nothing else may live in this directory: it is on ``sys.path`` of the development virtualenv.
"""

import importlib.util
import sys
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent.parent / "controllers" / "__init__.py"


def _load() -> None:
    spec = importlib.util.spec_from_file_location(__name__, _PACKAGE)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_PACKAGE} as {__name__}", name=__name__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[__name__] = module  # what the import statement returns (and removes on error)
    spec.loader.exec_module(module)


_load()
