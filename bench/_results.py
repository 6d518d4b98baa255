"""Machine-readable benchmark results: one JSON file per suite under ``bench/results/``.

Every file has the same envelope, read by ``bench/report.py``::

    {
      "suite": "informer",                  # decode, workqueue, informer, rollout
      "schema": 1,
      "measured": {"date": "2026-11-23", "started": "...Z", "finished": "...Z"},
      "machine": {"cpus": 2, "cpu_model": ..., "memory_gb": ..., "python": "3.11.7",
                  "go": "go1.26.8", "client_go": "v0.36.3", "kubernetes": "v1.36.3",
                  "load_average": [min, max]},    # 1-minute load, sampled during the runs
      "command": "python -m bench.informer ...",
      "parameters": {...},                  # the suite's flags
      "points": [{...}, ...],               # one per measured (implementation, size): medians
      ...                                   # suite-specific extras (raw runs, notes)
    }

A point always names its ``implementation``; the rest of its keys are the suite's (object
count, wall and CPU seconds, peak RSS, API writes by verb and resource, ...). Units are in
the key names (``_seconds``, ``_mb``, ``_bytes``, ``_per_second``).

A suite's raw runs between invocations (``--dump``, ``--merge``) are a plain JSON list of its
run dataclasses (a figure not measured is ``NaN``): :func:`dump_runs`, :func:`load_runs`.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import math
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RESULTS_DIR",
    "SCHEMA",
    "command_line",
    "dump_runs",
    "load_results",
    "load_runs",
    "machine_facts",
    "package_version",
    "write_results",
]

SCHEMA = 1
R = TypeVar("R")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _memory_gb() -> float:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return float("nan")


def _go_version() -> str | None:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        return None
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False).stdout
    parts = out.split()
    return parts[2] if len(parts) > 2 else None  # "go version go1.26.8 linux/amd64"


def machine_facts(
    loads: Iterable[float] = (), *, go: bool = True, kubernetes: bool = True
) -> dict[str, Any]:
    """CPUs, memory, Python, and (when the suite uses them) Go, client-go and Kubernetes
    versions; ``loads`` are the 1-minute load averages sampled during the runs."""
    facts: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
    }
    if go:
        from bench._reference import client_go_version  # noqa: PLC0415

        facts["go"] = _go_version()
        facts["client_go"] = client_go_version()
    if kubernetes:
        from kcontrol.envtest import K8S_VERSION  # noqa: PLC0415

        facts["kubernetes"] = K8S_VERSION
    loads = [x for x in loads if x == x]
    if loads:
        facts["load_average"] = [round(min(loads), 2), round(max(loads), 2)]
    return facts


def package_version(name: str) -> str | None:
    """The installed version of the Python package ``name`` (``None``: not installed), for a
    suite's machine facts."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def command_line(module: str) -> str:
    """How this run was started, as ``python -m bench.<suite> <args>``."""
    return " ".join([".venv/bin/python", "-m", module, *sys.argv[1:]])


def _iso(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_results(
    path: str | Path,
    suite: str,
    *,
    started: datetime.datetime,
    finished: datetime.datetime,
    machine: dict[str, Any],
    command: str,
    parameters: dict[str, Any],
    points: list[dict[str, Any]],
    **extra: Any,
) -> None:
    """Write one suite's results file (see the module docstring)."""
    document = {
        "suite": suite,
        "schema": SCHEMA,
        "measured": {
            "date": f"{started.astimezone(datetime.UTC):%Y-%m-%d}",
            "started": _iso(started),
            "finished": _iso(finished),
        },
        "machine": machine,
        "command": command,
        "parameters": parameters,
        "points": points,
        **extra,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_finite(document), indent=1, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity (a figure not measured) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def load_results(path: str | Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(Path(path).read_text())
    if document.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {document.get('schema')!r}, expected {SCHEMA}")
    return document


def dump_runs(path: str | Path, runs: Sequence[Any]) -> None:
    """The raw runs (dataclasses) as a JSON list, for :func:`load_runs`."""
    Path(path).write_text(json.dumps([dataclasses.asdict(r) for r in runs], indent=1))


def load_runs(path: str | Path, run: Callable[[dict[str, Any]], R]) -> list[R]:
    """The runs of a :func:`dump_runs` file, each built by ``run`` from its dict."""
    return [run(raw) for raw in json.loads(Path(path).read_text())]
