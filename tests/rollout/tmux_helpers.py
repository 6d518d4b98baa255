"""A terminal as a person sees it: a command in a detached tmux session on a private tmux
server, read with capture-pane and driven with send-keys."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence

import pytest

requires_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not on PATH")

EXIT_MARK = "EXITED WITH "


class Terminal:
    """``argv`` running in a ``width`` x ``height`` tmux pane. When it exits, the shell prints
    ``EXITED WITH <status>`` and keeps the pane open, so the last screen can still be read."""

    def __init__(
        self, argv: Sequence[str], *, width: int = 120, height: int = 40, env: Sequence[str] = ()
    ) -> None:
        self.socket = f"kcontrol-test-{uuid.uuid4().hex[:8]}"
        command = " ".join(shlex.quote(a) for a in argv)
        script = f"{command}; echo; echo {EXIT_MARK}$?; sleep 600"
        self._tmux(
            "new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height),
            *(f"-e{item}" for item in env), script,
        )  # fmt: skip

    def screen(self) -> str:
        """The visible pane, as text (no colours)."""
        return self._tmux("capture-pane", "-p", "-t", "main").stdout

    def send_keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "main", *keys)

    async def wait_for(self, predicate: Callable[[str], bool], within: float) -> str:
        """Poll the screen until ``predicate`` holds; fail with the last screen otherwise."""
        deadline = time.monotonic() + within
        while True:
            screen = await asyncio.to_thread(self.screen)
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"screen not as expected after {within} s:\n{screen}")
            await asyncio.sleep(0.25)

    def exit_status(self, screen: str) -> int | None:
        for line in screen.splitlines():
            if line.startswith(EXIT_MARK):
                return int(line[len(EXIT_MARK) :])
        return None

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False, capture_output=True)

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            check=True,
            capture_output=True,
            text=True,
            env=_ENV,
        )


# The tmux server's environment, which its panes inherit: not pytest's COLUMNS/LINES (80x24),
# which would override the pane's real size for rich.
_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def line_with(screen: str, needle: str) -> str:
    return next((line for line in screen.splitlines() if needle in line), "")
