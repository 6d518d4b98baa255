"""The documentation keeps up with the code.

``make docs`` (``mkdocs build --strict``) fails on a broken link, an API reference entry whose
module or symbol is gone, or a docstring cross-reference to a ``kcontrol`` name that does not
exist. What it cannot see is checked here:

- every public module of ``kcontrol`` (a package facade, or a module with ``__all__``) has an
  entry in the API reference, so a new package cannot ship undocumented;
- the Python examples in README.md and docs/ import only names that exist;
- README.md's links into docs/ and the repository point at files that exist;
- README.md's example runs as printed against the real apiserver.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import io
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from kcontrol.client import PODS, ApiClient, load_config
from kcontrol.envtest import ControlPlane

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PYTHON_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", flags=re.DOTALL | re.MULTILINE)


def public_modules() -> list[str]:
    """Dotted names of kcontrol's public modules: every package whose path has no ``_``
    component, and every such plain module that declares ``__all__``."""
    found = []
    for path in sorted((ROOT / "kcontrol").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        elif "__all__" not in path.read_text():
            continue
        if any(part.startswith("_") for part in parts[1:]) or len(parts) == 1:
            continue
        found.append(".".join(parts))
    return found


def documented_modules() -> set[str]:
    """The targets of the ``::: name`` directives of the API reference."""
    names = set()
    for page in (DOCS / "reference").glob("*.md"):
        names.update(re.findall(r"^::: *([\w.]+)", page.read_text(), flags=re.MULTILINE))
    return names


SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', flags=re.MULTILINE)


def python_blocks() -> list[tuple[str, str]]:
    """(where, code) of every Python block in README.md and docs/, dedented, with the files
    they include (``--8<-- "path"``, pymdownx.snippets) put in."""
    blocks = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text()
        for match in PYTHON_BLOCK.finditer(text):
            indent = len(match.group(1))
            code = "\n".join(line[indent:] for line in match.group(2).splitlines())
            code = SNIPPET.sub(lambda m: (ROOT / m.group(1)).read_text(), code)
            line = text.count("\n", 0, match.start()) + 1
            blocks.append((f"{page.relative_to(ROOT)}:{line}", code))
    return blocks


def test_there_are_public_modules_and_examples_to_check() -> None:
    assert "kcontrol.client" in public_modules()
    assert "kcontrol.envtest" in public_modules()
    assert len(python_blocks()) >= 5


@pytest.mark.parametrize("module", public_modules())
def test_every_public_module_is_in_the_api_reference(module: str) -> None:
    assert module in documented_modules(), (
        f"{module} has no API reference page: add `::: {module}` to a page of docs/reference/"
        " and that page to mkdocs.yml's nav"
    )


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=lambda v: str(v)[:60])
def test_examples_import_names_that_exist(where: str, code: str) -> None:
    tree = compile(code, where, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "kcontrol":
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                found = hasattr(module, alias.name) or _submodule(node.module, alias.name)
                assert found, f"{where}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kcontrol":
                    importlib.import_module(alias.name)


def _submodule(package: str, name: str) -> bool:
    """Whether ``from package import name`` names a submodule (importing it, as Python does):
    an attribute of the package only once something imported it."""
    try:
        importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError:
        return False
    return True


def test_readme_links_point_at_files_that_exist() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def readme_example() -> str:
    """README.md's Python block, without its last line (``asyncio.run(main())``, replaced by
    the test's own loop)."""
    blocks = [code for where, code in python_blocks() if where.startswith("README.md")]
    assert len(blocks) == 1, "README.md has one example"
    lines = blocks[0].rstrip().splitlines()
    assert lines[-1] == "asyncio.run(main())", lines[-1]
    return "\n".join(lines[:-1]) + "\n"


@pytest.mark.integration
async def test_the_readme_example_lists_the_pods_from_the_cache(
    control_plane: ControlPlane, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig_path))
    scope: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(readme_example(), str(README), "exec"), scope)
    main: Callable[[], Coroutine[Any, Any, None]] = scope["main"]

    config = await load_config(kubeconfig=str(control_plane.kubeconfig_path))
    async with ApiClient(config, qps=0) as client:
        container = {"name": "web", "image": "registry.k8s.io/pause:3.10"}
        pod = {
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"containers": [container]},
        }
        await client.create(PODS, pod)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        await asyncio.wait_for(main(), timeout=60)
    assert f"{namespace} web Pending" in output.getvalue().splitlines()
