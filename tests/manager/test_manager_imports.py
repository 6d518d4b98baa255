"""What kcontrol-manager loads at start: start-up CPU counts (benchmarks against
kube-controller-manager), so packages needed only in some configurations are imported when
that configuration is used, never by ``import kcontrol.manager``. Each check runs in a fresh
interpreter: this test process has imported everything already."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

START = (
    "import kcontrol.manager, kcontrol_controllers.job, kcontrol_controllers.replicaset, "
    "kcontrol_controllers.deployment"
)

NOT_AT_START = {
    "kubernetes_asyncio": "its generated API models cost ~0.45 s of CPU; kcontrol never needs it",
    "cryptography": "only to generate a self-signed serving certificate",
    "structlog": "only when kcontrol.logging.configure() sets up a process",
    "rich": "the rollout view (and structlog, when installed, once logging is set up)",
    "yaml": "only to read a kubeconfig",
    "kcontrol.client._clientcmd": "the kubeconfig loader, for kubeconfig users only",
    "kcontrol.client._exec": "exec credential plugins, for kubeconfig users only",
    "aiohttp": "the manager serves and requests with kcontrol's own HTTP/1.1 (~0.12 s of CPU)",
    "kcontrol.testing": "test helpers",
    "kcontrol.envtest": "the local control plane and cluster, for tests and make run",
    "kcontrol.operator": "the operator author's facade (kcontrol-manager needs none of it)",
    "kcontrol.rollout": "the rollout view",
}


def modules_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after a fresh interpreter ran ``code``."""
    report = "\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code + report],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded_of(modules: set[str], packages: dict[str, str]) -> dict[str, str]:
    return {
        name: why
        for name, why in packages.items()
        if name in modules or any(m.startswith(f"{name}.") for m in modules)
    }


def test_importing_the_manager_loads_nothing_optional() -> None:
    modules = modules_after(START)
    assert "kcontrol.manager" in modules and "kcontrol_controllers.job" in modules
    assert loaded_of(modules, NOT_AT_START) == {}


def test_reading_a_kubeconfig_loads_the_loader_only(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        json.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://k:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    code = f"""{START}
import asyncio
from kcontrol.client import load_config
config = asyncio.run(load_config(kubeconfig={str(kubeconfig)!r}))
assert config.host == "https://k:6443", config
"""
    modules = modules_after(code)
    assert {"yaml", "kcontrol.client._clientcmd", "kcontrol.client._kubeconfig"} <= modules
    assert "kubernetes_asyncio" not in modules


# The controller packages: kcontrol-manager loads every controller's SPEC at start (it accepts
# every controller's flags, enabled or not), so a package's __init__ loads only what its SPEC
# needs - the package, its names and its factory - and the rest of its __all__ on first use.
CONTROLLERS = ROOT / "controllers"
PACKAGES = sorted(p.name for p in CONTROLLERS.iterdir() if (p / "_factory.py").is_file())
"""Those with a factory: shared packages (history, scheduling) and controllers still being
built have none."""
AT_START = {"kcontrol_controllers", "kcontrol_controllers._lazy"} | {
    f"kcontrol_controllers.{package}{module}"
    for package in PACKAGES
    for module in ("", "._names", "._factory")
}
ENTRY_POINTS = (
    "import importlib.metadata as m, kcontrol.manager\n"
    "eps = m.entry_points(group=kcontrol.manager.ENTRY_POINT_GROUP)\n"
)


def controller_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] == "kcontrol_controllers"}


def test_there_are_controller_packages() -> None:
    assert {"deployment", "replicaset", "job", "cronjob", "configrestart"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_importing_a_controller_package_loads_its_spec_only(package: str) -> None:
    modules = modules_after(f"import kcontrol.manager, kcontrol_controllers.{package}")
    assert f"kcontrol_controllers.{package}" in modules
    assert controller_modules(modules) - AT_START == set()


def test_loading_every_entry_point_loads_the_specs_only() -> None:
    """What loading the specs adds to ``import kcontrol.manager`` (and listing the entry
    points): the packages' names and factories, nothing else - no controller, no shared
    controller module, no third-party or kcontrol module."""
    before = modules_after(ENTRY_POINTS)
    after = modules_after(
        ENTRY_POINTS
        + "specs = [e.load() for e in eps]\n"
        + "assert all(isinstance(s, kcontrol.manager.ControllerSpec) for s in specs), specs\n"
        + f"assert len(specs) >= {len(PACKAGES)}, specs\n"
    )
    assert after - before <= AT_START
    assert {f"kcontrol_controllers.{p}._factory" for p in PACKAGES} <= after


def exported_from(package: str) -> dict[str, str]:
    """Each name of ``package``'s ``__init__`` imports, module-level or under ``if
    TYPE_CHECKING:`` (what mypy sees), and the module it comes from."""
    path = CONTROLLERS / package / "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    statements: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            statements.extend(node.body)
        else:
            statements.append(node)
    found: dict[str, str] = {}
    for node in statements:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"kcontrol_controllers.{package}.{node.module}"
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checkers_see_every_exported_name(package: str) -> None:
    code = f"import kcontrol_controllers.{package} as p; print(json.dumps(p.__all__))"
    done = subprocess.run(
        [sys.executable, "-c", f"import json; {code}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    names = json.loads(done.stdout)
    assert names and set(names) <= set(exported_from(package))


def test_every_exported_name_imports_in_a_fresh_interpreter() -> None:
    """``from kcontrol_controllers.<package> import <name>`` for each name of each package's
    ``__all__``, each the object of the module its ``__init__`` imports it from."""
    exported = {package: exported_from(package) for package in PACKAGES}
    code = f"""
import importlib
exported = {exported!r}
for package, where in exported.items():
    p = importlib.import_module("kcontrol_controllers." + package)
    values = {{}}
    for name in p.__all__:
        exec(f"from kcontrol_controllers.{{package}} import {{name}} as value", None, values)
        assert values["value"] is getattr(importlib.import_module(where[name]), name), name
        assert getattr(p, name) is values["value"], name
    assert set(p.__all__) <= set(dir(p)), package
    try:
        p.NoSuchName
    except AttributeError:
        pass
    else:
        raise AssertionError(package)
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "ok"
