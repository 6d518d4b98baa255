"""Architecture rules, enforced: the layering of CONVENTIONS.md item 10.

kcontrol_controllers -> kcontrol toolkit (controller, events, leaderelection, serving, manager)
            -> kcontrol.informers -> kcontrol.workqueue / kcontrol.client / kcontrol.labels
and nothing in kcontrol imports ``kcontrol_controllers`` (the directory controllers/, installed
under that name; see tests/test_packaging.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Lower number = lower layer. A module may import only from its own layer or lower ones.
LAYERS: dict[str, int] = {
    "kcontrol.clock": 0,
    "kcontrol.errors": 0,
    "kcontrol.flowcontrol": 0,
    "kcontrol.logging": 0,
    "kcontrol._registry": 0,
    "kcontrol._gc": 0,
    "kcontrol.retry": 0,
    "kcontrol.metatime": 0,
    "kcontrol.labels": 1,
    "kcontrol.workqueue": 1,
    "kcontrol.client": 1,
    "kcontrol.discovery": 2,
    "kcontrol.informers": 2,
    # The real control plane and the local cluster (controller-runtime's pkg/envtest), on the
    # client alone: tests and make run's local mode start them.
    "kcontrol.envtest": 2,
    "kcontrol.controller": 3,
    "kcontrol.controllerutil": 3,
    "kcontrol.events": 3,
    "kcontrol.leaderelection": 3,
    # Secure serving of metrics and health checks: any manager (or program) uses it.
    "kcontrol.serving": 3,
    # Admission webhooks served on the same listener (controller-runtime's pkg/webhook).
    "kcontrol.webhook": 3,
    "kcontrol.manager": 4,
    # The operator layer: controller-runtime's builder, predicates and handlers on the manager.
    "kcontrol.builder": 5,
    # The operator author's one import: re-exports the names of the layers below.
    "kcontrol.operator": 5,
    "kcontrol.testing": 6,
    # The rollout view sits on the informers; its local mode (make run) starts
    # kcontrol.envtest's Cluster (never the test kit, kcontrol.testing).
    "kcontrol.rollout": 6,
    "kcontrol_controllers": 7,
}


def _layer_of(module: str) -> tuple[str, int] | None:
    if module == "kcontrol":  # the root facade re-exports only the lowest layer
        return ("kcontrol", 0)
    best: tuple[str, int] | None = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, layer)
    return best


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "controllers":  # the directory controllers/ is the package kcontrol_controllers
        parts[0] = "kcontrol_controllers"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


SOURCES = sorted([*(ROOT / "kcontrol").rglob("*.py"), *(ROOT / "controllers").rglob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_respect_layers(path: Path) -> None:
    module = _module_name(path)
    own = _layer_of(module)
    assert own is not None, f"{module} is in no layer; add its package to LAYERS"
    for imported in _imports(path):
        target = _layer_of(imported)
        if target is None:  # third-party or stdlib
            continue
        assert target[1] <= own[1], f"{module} (layer {own}) imports {imported} (layer {target})"


def test_kcontrol_never_imports_controllers() -> None:
    offenders = [
        f"{_module_name(p)} -> {name}"
        for p in (ROOT / "kcontrol").rglob("*.py")
        for name in _imports(p)
        if name.split(".")[0] in ("kcontrol_controllers", "controllers")
    ]
    assert offenders == []
