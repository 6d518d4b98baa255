"""``make run``'s local mode end to end, in a real terminal (tmux): a cluster of its own,
kcontrol-manager, the example's rollout, the automatic rolling update, and Ctrl-C removing
everything it started."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.rollout.tmux_helpers import Terminal, line_with, requires_tmux

pytestmark = [requires_tmux, pytest.mark.slow, pytest.mark.integration]

WITHIN = 120.0
"""Seconds for each step: starting a whole cluster on a shared 2-core machine is slow."""


def rolled_out(image: str) -> object:
    def check(screen: str) -> bool:
        line = line_with(screen, image)
        return (
            " new " in line
            and " 6/6 " in line
            and 'deployment "web" successfully rolled out' in screen
        )

    return check


async def test_local_mode_rolls_out_updates_and_cleans_up_on_ctrl_c() -> None:
    command = [
        "env", "-u", "KUBECONFIG", sys.executable, "-m", "kcontrol.rollout.local",
        "--update-after", "2", "--", "--log-format=console",
    ]  # fmt: skip
    term = Terminal(command, width=120, height=50)
    try:
        screen = await term.wait_for(rolled_out("registry.k8s.io/pause:3.9"), WITHIN)
        kubeconfig = re.search(r"export KUBECONFIG=(\S+)", screen)
        assert kubeconfig, screen
        directory = Path(kubeconfig.group(1)).parent
        assert directory.is_dir()
        pid = re.search(r"kcontrol-manager \(pid (\d+)\)", screen)
        assert pid, screen
        assert "kubectl get deploy,rs,pods -n kcontrol-demo" in screen
        assert "kubectl apply -f examples/rollout/deployment-v2.yaml" in screen
        assert "Available" in screen and "MinimumReplicasAvailable" in screen

        screen = await term.wait_for(
            lambda s: (
                rolled_out("registry.k8s.io/pause:3.10")(s) and "rolling update complete" in s
            ),
            WITHIN,
        )
        old = line_with(screen, "registry.k8s.io/pause:3.9")
        assert " old " in old and " 0/0 " in old, screen

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
