"""Every public name of kcontrol says what it is: functions and classes have docstrings, and
so does every public constant (an attribute docstring: the string right after its
assignment, which the API reference shows)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from functools import cache
from pathlib import Path

import kcontrol

ROOT = Path(kcontrol.__file__).parent


def public_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(kcontrol.__path__, "kcontrol.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
    ]


def documented_in(source: str) -> set[str]:
    """The names ``source`` assigns at module level with a string right after."""
    names: set[str] = set()
    body = ast.parse(source).body
    for node, following in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            names.update(targets)
    return names


@cache
def documented_constants() -> frozenset[str]:
    """Names assigned anywhere in kcontrol with a docstring (where a facade re-exports a
    constant, its docstring is where it is defined)."""
    return frozenset().union(*(documented_in(p.read_text()) for p in ROOT.rglob("*.py")))


def test_every_public_constant_has_a_docstring() -> None:
    undocumented = []
    for name in public_modules():
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", ()):
            value = getattr(module, attribute)
            if inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value):
                continue
            if attribute not in documented_constants():
                undocumented.append(f"{name}.{attribute}")
    assert undocumented == []


def test_the_scan_tells_documented_constants_from_the_others() -> None:
    source = 'A = 1\n"""A one."""\nB: int = 2\n"""B."""\nC = 3\nD = 4\n# no\nE = 5\n'
    assert documented_in(source) == {"A", "B"}
