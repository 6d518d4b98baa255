"""Processes the tests start and watch: one in its own session (a signal to the test's process
group never reaches it), its stdout and stderr in a log file, its JSON log lines readable."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LoggedProcess:
    """``argv`` started at once in ``cwd`` (the repository by default), logging to
    ``log_path`` (appended to with ``append``)."""

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        *,
        cwd: Path = ROOT,
        env: Mapping[str, str] | None = None,
        append: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        with log_path.open("ab" if append else "wb") as log:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=str(cwd),
                env=dict(env) if env is not None else None,
            )

    def signal(self, signum: int) -> None:
        self.popen.send_signal(signum)

    async def wait(self, within: float) -> int:
        """The exit status (negative: killed by that signal) once it exits."""
        return await asyncio.to_thread(self.popen.wait, within)

    def running(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_events(self) -> list[dict[str, Any]]:
        """The log's JSON object lines (anything else is skipped)."""
        events = []
        for line in self.log().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
        return events

    def stop(self) -> None:
        """Clean-up: SIGKILL if still running, resuming it first if it was stopped."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGCONT)
            self.popen.kill()
            self.popen.wait(10)
