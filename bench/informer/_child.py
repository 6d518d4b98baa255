"""What every measured child program shares: its clock, its result line, its dispatch.

A child is ``python -m bench.informer --child KIND ...``. It imports what it measures first
(``PRELOAD``), then starts its :class:`Clock`, so ``wall`` and ``CPU`` run from the start of
its main to has_synced and the interpreter's imports are reported apart. It prints its
figures as one ``RESULT {json}`` line on stdout (the Go program prints bare JSON).

Children import only what they measure, so that their RSS and import CPU stay their own:
the imports inside functions here and in the child modules are deliberate.
"""

# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench._process import self_cpu, self_peak_rss_kb, self_rss_kb

RESULT = "RESULT "

PRELOAD = {
    "kcontrol": ("kcontrol.client", "kcontrol.informers"),
    "aiohttp": ("aiohttp", "kcontrol.client"),
    "writer": ("kcontrol.client",),
    "official": ("kubernetes.client", "kubernetes.config", "kubernetes.informer"),
    "asyncio-models": ("kubernetes_asyncio.client", "kubernetes_asyncio.config"),
}
"""Child kind -> the modules it imports before its clock starts."""


def emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(RESULT + json.dumps(payload) + "\n")
    sys.stdout.flush()


@dataclass
class Clock:
    """Start of the measured part of a child: after imports."""

    wall: float = field(default_factory=time.perf_counter)
    cpu: float = field(default_factory=self_cpu)

    def sync_metrics(self, objects: int) -> dict[str, Any]:
        wall = time.perf_counter() - self.wall
        cpu_total = self_cpu()
        return {
            "objects": objects,
            "wall_seconds": wall,
            "cpu_seconds": cpu_total - self.cpu,
            "import_cpu_seconds": self.cpu,
            "maxrss_kb": self_peak_rss_kb(),
            "rss_kb": self_rss_kb(),
        }


def quiet_logs() -> None:
    import logging

    # kcontrol logs through stdlib logging only (kcontrol.logging): this is all it takes.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def child_main(args: argparse.Namespace) -> None:
    kind = args.child
    for module in PRELOAD.get(kind, ()):  # imports are not part of the measured sync
        importlib.import_module(module)
    quiet_logs()
    clock = Clock()
    if kind == "kcontrol":
        from bench.informer._kcontrol import run_kcontrol

        asyncio.run(run_kcontrol(args, clock))
    elif kind == "official":
        from bench.informer._official import run_official

        run_official(args, clock)
    elif kind == "asyncio-models":
        from bench.informer._floors import run_asyncio_models

        asyncio.run(run_asyncio_models(args, clock))
    elif kind == "aiohttp":
        from bench.informer._floors import run_aiohttp

        asyncio.run(run_aiohttp(args, clock))
    elif kind == "writer":
        from bench.informer._writer import run_writer

        asyncio.run(run_writer(args))
    else:
        raise SystemExit(f"unknown child {kind!r}")
