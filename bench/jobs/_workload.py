"""The workload: N Jobs of M completions each, P pods at a time, each pod running ~1 s.

Pure helpers (no cluster): the size notation ``NxMxP``, the Job manifest, when a Job counts
as finished, and how many kwok nodes a size needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PODS_PER_NODE",
    "Size",
    "finished",
    "job",
    "job_names",
    "node_count",
    "succeeded_failed",
]

PODS_PER_NODE = 110
"""A kwok node's pod capacity (kcontrol.envtest.cluster._kwok's node manifest)."""


@dataclass(frozen=True)
class Size:
    """``jobs`` Jobs, each of ``completions`` completions with ``parallelism`` pods at once."""

    jobs: int
    completions: int
    parallelism: int

    @property
    def label(self) -> str:
        return f"{self.jobs}x{self.completions}x{self.parallelism}"

    @property
    def pods(self) -> int:
        """Pods that succeed in all: one per completion (none fails in this workload)."""
        return self.jobs * self.completions

    @classmethod
    def parse(cls, text: str) -> Size:
        """``"20x10x5"``: 20 Jobs x 10 completions, parallelism 5; ``"20x10"``: parallelism
        = completions (every pod at once)."""
        parts = [int(p) for p in text.strip().lower().split("x")]
        if len(parts) == 2:
            parts.append(parts[1])
        if len(parts) != 3 or min(parts) < 1:
            raise ValueError(f"size {text!r}: expected NxM or NxMxP with positive numbers")
        return cls(*parts)


def job_names(size: Size) -> list[str]:
    return [f"j-{i:04d}" for i in range(size.jobs)]


def job(name: str, size: Size, pod_seconds: float) -> dict[str, Any]:
    """A NonIndexed Job whose pods sleep ``pod_seconds`` and exit 0 (as kwok plays it: the
    sleep is the container's run time, see kcontrol.envtest.cluster._kwok_job)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"bench": "jobs"}},
        "spec": {
            "completions": size.completions,
            "parallelism": size.parallelism,
            "template": {
                "metadata": {"labels": {"bench": "jobs"}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "work",
                            "image": "registry.example/work:1",
                            "command": ["sh", "-c", f"sleep {pod_seconds:g}; exit 0"],
                        }
                    ],
                },
            },
        },
    }


def finished(obj: dict[str, Any]) -> str | None:
    """``"Complete"`` or ``"Failed"`` once the Job has that condition ``True``, else None."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            kind: str = condition["type"]
            return kind
    return None


def succeeded_failed(obj: dict[str, Any]) -> tuple[int, int]:
    """The Job's ``status.succeeded`` and ``status.failed`` (0 when absent)."""
    status = obj.get("status") or {}
    return int(status.get("succeeded") or 0), int(status.get("failed") or 0)


def node_count(size: Size) -> int:
    """kwok nodes for a size: room for every pod at once (finished pods stay bound to their
    node until the namespace goes), plus one."""
    return math.ceil(size.pods / PODS_PER_NODE) + 1
