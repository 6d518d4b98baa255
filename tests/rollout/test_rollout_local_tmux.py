"""``make run``'s local mode end to end, in a real terminal (tmux): a cluster of its own,
kcontrol-manager, the example's rollout, the commands it suggests (run as shown, in a shell
without kubectl on its PATH), the automatic rolling update, and Ctrl-C removing everything it
started."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.rollout.tmux_helpers import Terminal, line_with, requires_tmux

pytestmark = [requires_tmux, pytest.mark.slow, pytest.mark.integration]

WITHIN = 120.0
"""Seconds for each step: starting a whole cluster on a shared 2-core machine is slow."""


def rolled_out(image: str) -> Callable[[str], bool]:
    def check(screen: str) -> bool:
        line = line_with(screen, image)
        return (
            " new " in line
            and " 6/6 " in line
            and 'deployment "web" successfully rolled out' in screen
        )

    return check


def suggested(screen: str) -> list[str]:
    """The header's commands to try, as the screen shows them."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("try, in another terminal"))
    commands = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        commands.append(line.strip())
    return commands


def run_as_shown(directory: Path, *lines: str) -> subprocess.CompletedProcess[str]:
    """``lines`` in a shell like a new terminal's: elsewhere, no PATH, no KUBECONFIG."""
    return subprocess.run(
        ["/bin/sh", "-c", "set -e\n" + "\n".join(lines)],
        cwd=directory,
        env={"PATH": "/nonexistent", "HOME": str(directory)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_local_mode_rolls_out_updates_and_cleans_up_on_ctrl_c(tmp_path: Path) -> None:
    command = [
        "env", "-u", "KUBECONFIG", sys.executable, "-m", "kcontrol.rollout.local",
        "--update-after", "2", "--", "--log-format=console",
    ]  # fmt: skip
    term = Terminal(command, width=120, height=50)
    try:
        finished = rolled_out("registry.k8s.io/pause:3.9")

        def drawn(screen: str) -> bool:
            # A frame captured while the terminal redraws can hold part of the header: wait
            # for one that shows the rollout done and the header's commands whole.
            return (
                finished(screen)
                and "try, in another terminal" in screen
                and len(suggested(screen)) >= 3
            )

        screen = await term.wait_for(drawn, WITHIN)
        kubeconfig = re.search(r"export KUBECONFIG=(\S+)", screen)
        assert kubeconfig, screen
        directory = Path(kubeconfig.group(1)).parent
        assert directory.is_dir()
        pid = re.search(r"kcontrol-manager \(pid (\d+)\)", screen)
        assert pid, screen
        assert "kubectl get deploy,rs,pods -n kcontrol-demo" in screen
        assert "kubectl apply -f examples/rollout/deployment-v2.yaml" in screen
        cd, export, get, *_ = suggested(screen)
        assert get.endswith("kubectl get deploy,rs,pods -n kcontrol-demo"), screen
        done = await asyncio.to_thread(run_as_shown, tmp_path, cd, export, get)
        assert done.returncode == 0, done.stderr
        assert "deployment.apps/web" in done.stdout and "replicaset.apps/web-" in done.stdout
        assert "Available" in screen and "MinimumReplicasAvailable" in screen

        screen = await term.wait_for(
            lambda s: (
                rolled_out("registry.k8s.io/pause:3.10")(s) and "rolling update complete" in s
            ),
            WITHIN,
        )
        old = line_with(screen, "registry.k8s.io/pause:3.9")
        assert " old " in old and " 0/0 " in old, screen
        lines = screen.splitlines()
        roll_back = lines[lines.index(line_with(screen, "Roll back:")) + 1].strip()
        assert roll_back.endswith("kubectl apply -f examples/rollout/deployment.yaml"), screen
        done = await asyncio.to_thread(run_as_shown, tmp_path, cd, export, roll_back)
        assert done.returncode == 0, done.stderr
        assert "deployment.apps/web configured" in done.stdout

        term.send_keys("C-c")
        screen = await term.wait_for(lambda s: term.exit_status(s) is not None, 60)
        assert term.exit_status(screen) == 0, screen
        assert "Traceback" not in screen
        assert f"stopped kcontrol-manager (pid {pid.group(1)})" in screen
        assert f"stopped the local cluster, removed {directory}" in screen
        assert not directory.exists()
        assert not _running(int(pid.group(1)))
    finally:
        term.close()


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False
