"""The writer process's side of the protocol, shared by every implementation.

A writer process is started as ``python -m bench.registry.<module> KUBECONFIG KEYS WORKERS``.
For each phase (``set``, then ``remove``) it waits for a line ``go`` on stdin, has its
``WORKERS`` workers write their share of the ``KEYS`` keys (worker ``i`` the keys
``i::WORKERS``; ``set`` gives each key a value, ``remove`` takes it out), and prints one
JSON line: the phase, its wall seconds from ``go`` to the last write answered, the process's
CPU-seconds over it (``getrusage``: every thread), and the implementation's own counts
(``requests`` sent, ``conflicts`` answered 409 and retried), and its peak RSS so far.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from bench._process import self_cpu, self_peak_rss_kb

__all__ = ["NAME", "NAMESPACE", "PHASES", "Counts", "key_names", "serve", "value_of"]

NAME = "memcached-registry"
NAMESPACE = "ops"
PHASES = ("set", "remove")


@dataclass
class Counts:
    requests: int = 0
    conflicts: int = 0


def key_names(keys: int) -> list[str]:
    return [f"memcached-{i:04d}" for i in range(keys)]


def value_of(key: str) -> str:
    """The value ``set`` writes for ``key``: the owner's endpoint."""
    return f"{key}.{NAMESPACE}.svc:11211"


WriteShare = Callable[[list[str], str, Counts], Awaitable[None]]
"""Write ``keys`` (``set``: their values; ``remove``: take them out), counting into Counts."""


async def _phase(write: WriteShare, keys: list[str], workers: int, phase: str) -> dict[str, object]:
    counts = Counts()
    t0, cpu0 = time.monotonic(), self_cpu()
    await asyncio.gather(*(write(keys[i::workers], phase, counts) for i in range(workers)))
    return {
        "phase": phase,
        "wall": time.monotonic() - t0,
        "cpu": self_cpu() - cpu0,
        "peak_rss_kb": self_peak_rss_kb(),
        **asdict(counts),
    }


async def _serve(setup: Callable[[str], Awaitable[WriteShare]], argv: list[str]) -> None:
    kubeconfig, keys, workers = argv[0], key_names(int(argv[1])), int(argv[2])
    write = await setup(kubeconfig)
    print(json.dumps({"ready": True}), flush=True)
    for phase in PHASES:
        line = await asyncio.to_thread(sys.stdin.readline)
        if line.strip() != "go":
            return
        print(json.dumps(await _phase(write, keys, workers, phase)), flush=True)


def serve(setup: Callable[[str], Awaitable[WriteShare]]) -> None:
    """Run the protocol with the writer ``setup(kubeconfig)`` returns."""
    asyncio.run(_serve(setup, sys.argv[1:]))
