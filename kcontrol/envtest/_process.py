"""The control plane's processes: where their binaries are, free loopback ports, and one child
process with its log, managed without an event loop.

A binary is looked up in ``$KCONTROL_ASSETS``, then ``$KUBEBUILDER_ASSETS`` (controller-runtime's
convention), then the per-version cache that ``hack/build-k8s.sh`` fills
(``~/.cache/kcontrol/k8s/<version>/``). A :class:`Process` runs in its own session and is
started, signalled and stopped with plain :mod:`subprocess`, so a process started in one event
loop can be stopped from another. On Linux a process started from the main thread dies with
the process that started it (``PR_SET_PDEATHSIG``): a test run or a ``make run`` killed with
SIGKILL leaves no etcd, kube-apiserver or component behind. (The signal follows the thread
that forked, so a process started from another thread is not tied: that thread may end
first.) :class:`ControlPlaneError` is what a missing binary or a component that does not
come up raises.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kcontrol.errors import KcontrolError

__all__ = [
    "K8S_VERSION",
    "PORT_ATTEMPTS",
    "ControlPlaneError",
    "Process",
    "find_binary",
    "free_port",
    "log_size",
    "lost_port",
    "tail",
]

K8S_VERSION = os.environ.get("KCONTROL_K8S_VERSION", "v1.36.3")
"""The Kubernetes release whose binaries are used (hack/k8s/go.mod pins the same)."""


class ControlPlaneError(KcontrolError):
    """The control plane could not be started; the message carries the component's log tail."""


def _cache_dir() -> Path:
    root = os.environ.get("KCONTROL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kcontrol"
    )
    return Path(root) / "k8s" / K8S_VERSION


def find_binary(name: str) -> Path:
    """Locate a control-plane binary, or raise :class:`ControlPlaneError` saying how to get it."""
    candidates = [os.environ.get("KCONTROL_ASSETS"), os.environ.get("KUBEBUILDER_ASSETS")]
    for directory in [*(Path(c) for c in candidates if c), _cache_dir()]:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ControlPlaneError(
        f"{name} {K8S_VERSION} not found in $KCONTROL_ASSETS, $KUBEBUILDER_ASSETS or "
        f"{_cache_dir()}; build it with `hack/build-k8s.sh` (or `make assets`)"
    )


def free_port() -> int:
    """A loopback TCP port free now (another process may take it before it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


PORT_ATTEMPTS = 3
"""Times etcd and kube-apiserver are started on fresh ports when another process took a
port between :func:`free_port` and their own bind: the ports come from the ephemeral range,
which every outgoing connection on a busy machine draws from too."""


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def lost_port(log: Path, offset: int) -> bool:
    """Whether the process logging to ``log`` (from ``offset``) failed to bind its port."""
    try:
        with log.open("rb") as out:
            out.seek(offset)
            return b"address already in use" in out.read()
    except OSError:
        return False


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _dies_with(parent: int) -> Callable[[], None] | None:
    """What the child runs between fork and exec to be SIGKILLed when ``parent`` ends
    (None where that cannot be had: not Linux, or not started from the main thread)."""
    libc = _LIBC
    if libc is None or threading.current_thread() is not threading.main_thread():
        return None

    def tie() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent ended before the tie: end now
            os._exit(1)

    return tie


class Process:
    """One child process with its log file; loop-independent. Started from the main thread
    on Linux, it is killed when the starting process ends (module docstring)."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_dies_with(os.getpid()),  # noqa: PLW1509 - one syscall, no locks
            )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            assert self.popen is not None
            os.killpg(self.popen.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        self.popen = None
