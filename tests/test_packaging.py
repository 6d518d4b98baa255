"""What ``pip install kcontrol`` puts into site-packages, and what an editable install imports.

The wheel's top-level names are kcontrol's own - ``kcontrol`` and ``kcontrol_controllers`` (the
directory controllers/, renamed by pyproject.toml's ``sources``) - so it cannot collide with an
application's ``controllers``, and its entry points resolve to modules inside it. The editable
install (``make venv``: ``pip install -e``) imports the same modules under the same names, from
the source files themselves. The controllers have one import name everywhere: ``controllers``
fails to import, and nothing in the repository imports it.

The wheels are built as pip builds them, through hatchling's PEP 517 hooks, with the hatchling
of this virtualenv (``--no-isolation``: nothing is downloaded). Each is unpacked into a
directory that a fresh interpreter (``-S``: without this virtualenv's site-packages and its
``.pth`` files, which point at the checkout) takes as its site directory, with this
virtualenv's site-packages after it only for the dependencies.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from dataclasses import dataclass
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTROLLERS = ROOT / "controllers"

OWNED = {"kcontrol", "kcontrol_controllers"}
"""The wheel's top-level import names: the only ones kcontrol may take in site-packages."""

GROUPS = ("kcontrol.controllers", "console_scripts")


@dataclass(frozen=True)
class Installed:
    """An unpacked wheel: ``site`` as its site directory, ``dist_info`` its metadata."""

    site: Path
    dist_info: Path

    @property
    def dist(self) -> PathDistribution:
        return PathDistribution(self.dist_info)

    def files(self) -> set[str]:
        """The files its RECORD lists."""
        files = self.dist.files
        assert files, "the wheel has no RECORD"
        return {str(f) for f in files}

    def top_level_names(self) -> set[str]:
        """The first path component of every file in its RECORD, but its metadata's."""
        return {f.split("/")[0] for f in self.files() if ".dist-info/" not in f}


def _build(hook: str, tmp: Path) -> Installed:
    """Run hatchling's PEP 517 ``hook`` on the repository, as pip does, and unpack the wheel."""
    out = tmp / "out"
    if hook == "build_wheel":  # the standard front end, building as `pip install .` does
        command = ["-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)]
    else:  # `build` has no editable mode: the hook itself, as `pip install -e .` calls it
        command = ["-c", f"import hatchling.build as b; b.{hook}({str(out)!r})"]
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    site = tmp / "site"
    with zipfile.ZipFile(wheel) as archive:  # a pure wheel: purelib is its root
        archive.extractall(site)
    (dist_info,) = site.glob("*.dist-info")
    return Installed(site, dist_info)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel ``pip install kcontrol`` installs."""
    return _build("build_wheel", tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel ``pip install -e .`` installs."""
    return _build("build_editable", tmp_path_factory.mktemp("editable"))


def _source_modules() -> dict[str, Path]:
    """controllers/'s source files by the module name they are installed as."""
    modules = {}
    for path in CONTROLLERS.rglob("*.py"):
        parts = ["kcontrol_controllers", *path.relative_to(CONTROLLERS).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    assert "kcontrol_controllers.deployment" in modules
    return modules


# In a fresh interpreter without site-packages (-S) and without the current directory on
# sys.path (-P): takes the unpacked wheel as its site directory (its .pth files processed), then
# this virtualenv's site-packages for the dependencies only; loads every entry point of GROUPS,
# imports ``controllers`` and every controller module; reports where each came from.
IMPORT_ALL = """
import importlib, importlib.metadata, json, pathlib, site, sys
target, dist_info, purelib = sys.argv[1:4]
groups, modules = json.loads(sys.argv[4]), json.loads(sys.argv[5])
site.addsitedir(target)
sys.path.append(purelib)
entry_points = {}
for entry in importlib.metadata.PathDistribution(pathlib.Path(dist_info)).entry_points:
    if entry.group in groups:
        loaded = entry.load()
        entry_points[entry.name] = {
            "module": sys.modules[entry.module].__file__,
            "name": getattr(loaded, "name", None),
        }
try:
    importlib.import_module("controllers")
    old_name = "imported"
except ImportError as error:
    old_name = str(error)
files = {name: importlib.import_module(name).__file__ for name in modules}
ours = {
    name: getattr(module, "__file__", None) for name, module in sys.modules.items()
    if name.split(".")[0] in ("kcontrol", "kcontrol_controllers", "controllers")
}
print(json.dumps({"entry_points": entry_points, "controllers": old_name, "files": files,
                  "ours": ours}))
"""


def _import_all(installed: Installed, cwd: Path) -> dict[str, Any]:
    purelib = sysconfig.get_paths()["purelib"]
    args = [str(installed.site), str(installed.dist_info), purelib]
    args += [json.dumps(GROUPS), json.dumps(sorted(_source_modules()))]
    done = subprocess.run(
        [sys.executable, "-S", "-P", "-c", IMPORT_ALL, *args],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _within(path: str | None, directory: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(directory.resolve())


# -- the wheel ----------------------------------------------------------------------------------


def test_the_wheel_has_only_kcontrols_top_level_names(wheel: Installed) -> None:
    assert wheel.top_level_names() == OWNED


def test_the_wheel_holds_controllers_as_kcontrol_controllers(wheel: Installed) -> None:
    expected = {
        f"kcontrol_controllers/{path.relative_to(CONTROLLERS).as_posix()}"
        for path in _source_modules().values()
    }
    assert {f for f in wheel.files() if f.startswith("kcontrol_controllers/")} == expected


def test_the_wheels_entry_points_resolve_inside_it(wheel: Installed, tmp_path: Path) -> None:
    result = _import_all(wheel, tmp_path)
    entry_points = result["entry_points"]
    assert set(entry_points) == {"kcontrol-manager", *_registered_controllers()}
    for name, entry in entry_points.items():
        assert _within(entry["module"], wheel.site), (name, entry)
    for name in _registered_controllers():  # each a ControllerSpec of that name
        assert entry_points[name]["name"] == name
    outside = {n: f for n, f in result["ours"].items() if not _within(f, wheel.site)}
    assert outside == {}, "imported from outside the wheel"
    assert result["controllers"] == "No module named 'controllers'"


# -- the editable install -----------------------------------------------------------------------


def test_the_editable_wheel_copies_no_source(editable: Installed) -> None:
    """Only path entries and metadata: a copied module would stop following its source."""
    assert {f for f in editable.files() if not f.endswith(".pth")} == {
        f for f in editable.files() if ".dist-info/" in f
    }


def test_editable_imports_the_sources_under_the_wheels_names(
    editable: Installed, tmp_path: Path
) -> None:
    """Every module the wheel holds (see above) is its source file, under the same name."""
    result = _import_all(editable, tmp_path)
    assert result["files"] == {name: str(path) for name, path in _source_modules().items()}
    entry_points = result["entry_points"]
    assert set(entry_points) == {"kcontrol-manager", *_registered_controllers()}
    assert _within(entry_points["kcontrol-manager"]["module"], ROOT / "kcontrol")
    for name in _registered_controllers():
        assert _within(entry_points[name]["module"], CONTROLLERS), entry_points[name]
        assert entry_points[name]["name"] == name
    # The checkout is on sys.path, so controllers/ is found as `controllers` too: it refuses.
    assert "imported as kcontrol_controllers" in result["controllers"]
    assert [n for n in result["ours"] if n.split(".")[0] == "controllers"] == []
    outside = {n: f for n, f in result["ours"].items() if not _within(f, ROOT)}
    assert outside == {}, "imported from outside the checkout"


# -- one import name ----------------------------------------------------------------------------


def _registered_controllers() -> set[str]:
    """The names pyproject.toml registers in the group kcontrol.controllers."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries: dict[str, str] = project["entry-points"]["kcontrol.controllers"]
    assert all(value.startswith("kcontrol_controllers.") for value in entries.values()), entries
    return set(entries)


def _old_name_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names]
    return [f for f in found if f.split(" ")[1].split(".")[0] == "controllers"]


def test_nothing_imports_the_directory_name() -> None:
    sources = [
        p
        for top in ("kcontrol", "controllers", "tests", "bench", "examples", "hack")
        for p in (ROOT / top).rglob("*.py")
    ]
    assert len(sources) > 100
    assert [hit for path in sources for hit in _old_name_imports(path)] == []


def test_controllers_is_not_importable_by_its_directory_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the checkout's root on sys.path (as it is when running from it), controllers/ is
    found as ``controllers``: that second copy refuses to load."""
    monkeypatch.syspath_prepend(str(ROOT))
    with pytest.raises(ImportError, match="imported as kcontrol_controllers"):
        __import__("controllers")
    assert "controllers" not in sys.modules
