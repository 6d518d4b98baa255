"""The commands ``make run`` prints work as shown in a new terminal: one whose PATH has no
kubectl (``make assets`` built it into the cache directory) and no virtualenv, that starts in
another directory and knows no cluster. Each is run by a shell with an empty PATH, against a
stand-in kubectl that records how it was called."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from kcontrol.rollout._local import EXAMPLES, Commands, LocalOptions, _header

ROOT = Path(__file__).resolve().parents[2]
TARGET = "kcontrol-demo/web"

RECORDER = """#!/bin/sh
printf '%s|%s|%s\\n' "$PWD" "$KUBECONFIG" "$*" >> {record}
"""


class NewTerminal:
    """A built kubectl (a recorder) where ``make assets`` puts it, another kubectl on this
    process's PATH only, and a shell like a new terminal's to run printed lines in."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = tmp_path / "calls"
        self.home = tmp_path / "home"
        self.home.mkdir()
        assets = tmp_path / "cache" / "k8s"
        on_path = tmp_path / "usr-bin"
        for directory, record in ((assets, self.calls), (on_path, tmp_path / "wrong-kubectl")):
            directory.mkdir(parents=True)
            kubectl = directory / "kubectl"
            kubectl.write_text(RECORDER.format(record=record))
            kubectl.chmod(0o755)
        monkeypatch.setenv("KCONTROL_ASSETS", str(assets))
        monkeypatch.setenv("PATH", f"{on_path}{os.pathsep}{os.environ['PATH']}")
        self.built = assets / "kubectl"

    def run(self, *lines: str) -> subprocess.CompletedProcess[str]:
        """``lines`` as a script, in the home directory, with an empty PATH and environment."""
        done = subprocess.run(
            ["/bin/sh", "-c", "set -e\n" + "\n".join(lines)],
            cwd=self.home,
            env={"PATH": "/nonexistent", "HOME": str(self.home)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{lines}:\n{done.stderr}"
        return done

    def recorded(self) -> list[tuple[str, str, str]]:
        """(working directory, $KUBECONFIG, arguments) of each call of the built kubectl."""
        lines = self.calls.read_text().splitlines() if self.calls.exists() else []
        self.calls.unlink(missing_ok=True)
        return [(a, b, c) for a, b, c in (line.split("|") for line in lines)]


@pytest.fixture
def terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NewTerminal:
    return NewTerminal(tmp_path, monkeypatch)


@pytest.fixture
def commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: NewTerminal) -> Commands:
    """As ``make run`` computes them: from the source tree, with a kubeconfig given by a
    relative path holding a space."""
    monkeypatch.chdir(ROOT)
    kubeconfig = tmp_path / "my cluster" / "admin.kubeconfig"
    kubeconfig.parent.mkdir()
    kubeconfig.write_text("{}")
    return Commands.for_cluster(os.path.relpath(kubeconfig, ROOT))


def header(commands: Commands) -> list[str]:
    """The header's lines to try, as printed (without indentation)."""
    lines = _header(
        LocalOptions(console=Console()),
        commands,
        manager=(4242, Path("/tmp/kcontrol-manager.log")),
        target=TARGET,
        second=EXAMPLES / "deployment-v2.yaml",
    )
    start = lines.index("try, in another terminal:") + 1
    return [line.strip() for line in lines[start:] if line.startswith("  ")]


def test_header_commands_work_as_shown_in_a_new_terminal(
    commands: Commands, terminal: NewTerminal, tmp_path: Path
) -> None:
    cd, export, get, apply, scale, view = header(commands)
    kubeconfig = str(tmp_path / "my cluster" / "admin.kubeconfig")
    assert get.startswith(f"{terminal.built} "), "the built kubectl, by its path"

    terminal.run(cd, export, get, apply, scale)
    assert terminal.recorded() == [
        (str(ROOT), kubeconfig, "get deploy,rs,pods -n kcontrol-demo"),
        (str(ROOT), kubeconfig, "apply -f examples/rollout/deployment-v2.yaml"),
        (str(ROOT), kubeconfig, "scale deploy/web -n kcontrol-demo --replicas=10"),
    ]
    assert (ROOT / "examples" / "rollout" / "deployment-v2.yaml").is_file()

    # The view's line runs this interpreter, which has kcontrol (asked for --help only).
    command, _, comment = view.partition("#")
    assert comment.strip() == "this view, on any cluster"
    done = terminal.run(cd, export, f"{command.strip()} --help")
    assert "python -m kcontrol.rollout" in done.stdout


def test_notice_commands_work_after_the_header_setup(
    commands: Commands, terminal: NewTerminal
) -> None:
    cd, export, *_ = header(commands)
    terminal.run(cd, export, commands.apply(EXAMPLES / "deployment.yaml"))
    [(directory, _, args)] = terminal.recorded()
    assert (directory, args) == (str(ROOT), "apply -f examples/rollout/deployment.yaml")


def test_the_parting_command_works_in_any_terminal(
    commands: Commands, terminal: NewTerminal, tmp_path: Path
) -> None:
    """After Ctrl-C on $KUBECONFIG's cluster: printed in make run's terminal, which may not
    have $KUBECONFIG set (``--kubeconfig`` given instead)."""
    terminal.run(commands.kubectl_standalone("delete", "namespace", "kcontrol-demo"))
    assert terminal.recorded() == [
        (
            str(terminal.home),
            str(tmp_path / "my cluster" / "admin.kubeconfig"),
            "delete namespace kcontrol-demo",
        )
    ]


def test_without_a_built_kubectl_the_one_on_path_is_named_by_its_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KCONTROL_ASSETS", str(tmp_path / "nothing"))
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path / "nothing"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.cache/kcontrol either
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("KCONTROL_CACHE_DIR", raising=False)
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "kubectl").write_text("#!/bin/sh\n")
    (on_path / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"bin{os.pathsep}/nonexistent")
    monkeypatch.chdir(tmp_path)
    commands = Commands.for_cluster("admin.kubeconfig")
    assert commands.kubectl == str(on_path / "kubectl")
    assert commands.python == str(Path(sys.executable).absolute()), "not below the directory"
