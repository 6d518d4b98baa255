"""The two operators under test: how each is started, where its source is, and its process.

Both are started the way their users start them, with nothing but a kubeconfig: flags,
settings and client limits stay at their defaults. ``{kubeconfig}`` in a command is replaced
by the operator user's kubeconfig path, which is also in ``$KUBECONFIG``; commands run from
the repository root.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench._process import proc_cpu, proc_status_kb

__all__ = [
    "IMPLEMENTATIONS",
    "KCONTROL",
    "KCONTROL_COMMAND",
    "KOPF",
    "KOPF_COMMAND",
    "ROOT",
    "Implementation",
    "OperatorProcess",
]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

KCONTROL = "kcontrol"
KOPF = "kopf"

KCONTROL_COMMAND = [sys.executable, "-m", "examples.website", "--kubeconfig", "{kubeconfig}"]
"""The kcontrol operator (examples/website), as its README starts it."""

KOPF_COMMAND = [
    str(BIN / "kopf"),
    "run",
    "--standalone",  # no peering: it would need kopf's peering CRDs installed
    "--all-namespaces",
    str(ROOT / "bench" / "operator" / "kopf_website.py"),
]
"""The kopf operator (bench/operator/kopf_website.py), as kopf's documentation starts one."""


@dataclass(frozen=True)
class Implementation:
    name: str
    command: list[str]
    source: Path  # a file or a directory (its tests excluded): what the lines count


IMPLEMENTATIONS = {
    KCONTROL: Implementation(KCONTROL, KCONTROL_COMMAND, ROOT / "examples" / "website"),
    KOPF: Implementation(KOPF, KOPF_COMMAND, ROOT / "bench" / "operator" / "kopf_website.py"),
}


class OperatorProcess:
    """One operator as a process of its own, its output in ``log``."""

    def __init__(self, implementation: Implementation, kubeconfig: Path, log: Path) -> None:
        self.implementation = implementation
        self.argv = [a.replace("{kubeconfig}", str(kubeconfig)) for a in implementation.command]
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.popen is not None, "not started"
        return self.popen.pid

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def cpu(self) -> float:
        """user + sys CPU-seconds so far, every thread."""
        return proc_cpu(self.pid)

    def peak_rss_kb(self) -> int:
        return proc_status_kb(self.pid, "VmHWM:")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 20 s."""
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(20)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
