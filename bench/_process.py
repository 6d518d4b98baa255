"""Process measurements shared by the benchmarks: CPU-seconds, resident memory, load.

Two views of a process:

- *this* process (a measured child measuring itself): :func:`self_cpu` is user + sys from
  ``getrusage`` (microsecond resolution), :func:`self_peak_rss_kb` its ``VmHWM``, and
  :func:`settled_rss_kb` its ``VmRSS`` after a full collection and handing free heap back;
- *another* running process (an orchestrator watching a controller, or a child it is about
  to kill at a timeout): :func:`proc_cpu` is user + sys of all its threads from
  ``/proc/<pid>/stat`` (clock-tick resolution, 10 ms), :func:`proc_status_kb` any
  ``/proc/<pid>/status`` field (``VmHWM:``, ``VmRSS:``).

Peak RSS is always ``VmHWM``, never ``ru_maxrss``: on Linux a child's ``ru_maxrss`` also
counts the parent's RSS at fork (it survives exec), i.e. the orchestrator's.
"""

from __future__ import annotations

import compileall
import contextlib
import ctypes
import functools
import gc
import os
import resource
from pathlib import Path

__all__ = [
    "kcontrol_manager",
    "load_average",
    "proc_cpu",
    "proc_status_kb",
    "self_cpu",
    "self_peak_rss_kb",
    "self_rss_kb",
    "settled_rss_kb",
]

_TICKS = os.sysconf("SC_CLK_TCK")
_ROOT = Path(__file__).resolve().parent.parent


def kcontrol_manager() -> Path:
    """The ``kcontrol-manager`` the benchmarks run: ``.venv-runtime``'s, installed as the
    image installs it (the ``uvloop`` extra, no development tools), when ``make bench`` has
    made it; else ``.venv``'s. The difference is start-up: structlog imports rich whenever
    it is installed, and ``.venv`` has it (the ``dev`` extra) - about 0.04 CPU-seconds at
    every start that a deployed kcontrol-manager does not spend.

    The working tree's byte code is brought up to date first (once per benchmark process),
    as ``make bench`` does: both virtualenvs install kcontrol editable, and on a machine that
    sets ``PYTHONDONTWRITEBYTECODE`` a module changed since the last compile would be compiled
    again at every start of the process measured - start-up CPU the image never spends."""
    _compile_working_tree()
    runtime = _ROOT / ".venv-runtime" / "bin" / "kcontrol-manager"
    return runtime if runtime.exists() else _ROOT / ".venv" / "bin" / "kcontrol-manager"


def proc_cpu(pid: int | str = "self") -> float:
    """user + sys CPU-seconds of a process, all its threads (``/proc/<pid>/stat``).

    Raises ``OSError`` once the process is gone (and reaped)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)


def proc_status_kb(pid: int | str, name: str) -> int:
    """A ``/proc/<pid>/status`` field in kB (``name`` with its colon: ``"VmHWM:"``); -1 if
    the kernel does not report it."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(name):
                return int(line.split()[1])
    return -1


def self_cpu() -> float:
    """user + sys CPU-seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def self_peak_rss_kb() -> int:
    """Peak RSS (kB) of this process: ``VmHWM``."""
    return proc_status_kb("self", "VmHWM:")


def self_rss_kb() -> int:
    """Current RSS (kB) of this process: ``VmRSS``."""
    return proc_status_kb("self", "VmRSS:")


def settled_rss_kb() -> int:
    """VmRSS (kB) of this process after a full collection and returning free heap to the OS
    (``malloc_trim(0)``, where glibc has it)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return self_rss_kb()


def load_average() -> float:
    """The 1-minute load average (NaN where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


@functools.cache
def _compile_working_tree() -> None:
    for package in ("kcontrol", "controllers", "examples"):
        compileall.compile_dir(_ROOT / package, quiet=1)
