"""What the informer benchmark measures: one :class:`Variant` per program and setting."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.informer._client_go import KCM_FLAGS, LIST_ENV, go_argv
from bench.informer._kcontrol import MANAGER_FLAGS

__all__ = ["ROOT", "Variant", "py_argv", "variants"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the children run there, as ``python -m bench.informer --child``."""


@dataclass(frozen=True)
class Variant:
    name: str
    runtime: str  # "kcontrol", "go", "official", "asyncio", "floor": selects the empty baseline
    argv: Callable[[str, str], list[str]]  # (kubeconfig, namespace) -> command
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False


def py_argv(kind: str, *extra: str) -> Callable[[str, str], list[str]]:
    """(kubeconfig, namespace) -> the command running a Python child of ``kind``."""

    def argv(kubeconfig: str, namespace: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "bench.informer",
            "--child",
            kind,
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            namespace,
            *extra,
        ]

    return argv


def variants(binary: Path) -> list[Variant]:
    kc = "kcontrol"
    return [
        Variant("kcontrol", kc, py_argv(kc)),
        Variant("client-go", "go", go_argv(binary)),
        Variant("kcontrol trim", kc, py_argv(kc, "--transform", "trim")),
        Variant("client-go trim", "go", go_argv(binary, "-trim-managed-fields")),
        Variant("kcontrol no-intern", kc, py_argv(kc, "--no-intern")),
        Variant("kcontrol no-gzip", kc, py_argv(kc, "--no-compression")),
        Variant("kcontrol watch-list", kc, py_argv(kc, "--watch-list")),
        Variant("client-go LIST", "go", go_argv(binary), env=LIST_ENV),
        Variant("kcontrol watch-list trim", kc, py_argv(kc, "--watch-list", "--transform", "trim")),
        Variant("kcontrol manager", kc, py_argv(kc, *MANAGER_FLAGS)),
        Variant("client-go kcm", "go", go_argv(binary, *KCM_FLAGS)),
        Variant("aiohttp floor", "floor", py_argv("aiohttp")),
        Variant("official", "official", py_argv("official"), slow=True),
        Variant("asyncio models", "asyncio", py_argv("asyncio-models"), slow=True),
    ]
