"""The workloads: N StatefulSets of R replicas, M DaemonSets over K nodes; no cluster needed.

Pure helpers: the size notation (``sts=NxR``, ``ds=MxK``), the manifests, the re-template
patch, when a set counts as rolled out, and the kwok nodes a list of sizes needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DS",
    "DS_MAX_UNAVAILABLE",
    "KINDS",
    "PODS_PER_NODE",
    "POOL_LABEL",
    "STS",
    "Size",
    "daemonset",
    "is_rolled_out",
    "node_pools",
    "set_names",
    "spare_nodes",
    "statefulset",
    "template_patch",
]

STS = "sts"
DS = "ds"
KINDS = (STS, DS)
PODS_PER_NODE = 110
"""A kwok node's pod capacity (kcontrol.envtest.cluster._kwok's node manifest)."""
POOL_LABEL = "bench.kcontrol.io/ds-pool-{nodes}"
"""The label (value ``"true"``) on the first K kwok nodes that a ``ds=MxK`` size's
DaemonSets select: the cluster may have more nodes than K (another size's, or the spare
ones for StatefulSet pods), and a DaemonSet's desired count must be K."""
DS_MAX_UNAVAILABLE = "10%"
"""The DaemonSets' ``rollingUpdate.maxUnavailable``: 5 of 50 nodes (rounded up: 1 of 5), so a
re-template is ten waves of five pods rather than 50 one after the other (the default 1)."""


@dataclass(frozen=True)
class Size:
    """``kind`` ``sts``: ``sets`` StatefulSets of ``n`` replicas; ``ds``: ``sets`` DaemonSets
    over ``n`` nodes."""

    kind: str
    sets: int
    n: int

    @property
    def label(self) -> str:
        return f"{self.kind}={self.sets}x{self.n}"

    @property
    def pods(self) -> int:
        return self.sets * self.n

    @property
    def resource(self) -> str:
        return "StatefulSets" if self.kind == STS else "DaemonSets"

    @classmethod
    def parse(cls, text: str) -> Size:
        """``"sts=50x5"``: 50 StatefulSets x 5 replicas; ``"ds=5x50"``: 5 DaemonSets over 50
        nodes."""
        kind, sep, rest = text.strip().lower().partition("=")
        parts = rest.split("x")
        if not sep or kind not in KINDS or len(parts) != 2:
            raise ValueError(f"size {text!r}: expected sts=NxR or ds=MxK")
        try:
            sets, n = int(parts[0]), int(parts[1])
        except ValueError:
            raise ValueError(f"size {text!r}: expected sts=NxR or ds=MxK") from None
        if min(sets, n) < 1:
            raise ValueError(f"size {text!r}: numbers must be positive")
        if kind == DS and sets > PODS_PER_NODE:
            raise ValueError(f"size {text!r}: at most {PODS_PER_NODE} DaemonSets per node")
        return cls(kind, sets, n)


def set_names(size: Size) -> list[str]:
    return [f"{size.kind}-{i:04d}" for i in range(size.sets)]


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    """OrderedReady, RollingUpdate (the defaults, partition 0), no volumeClaimTemplates; the
    governing Service need not exist (nothing resolves the pods' names on kwok)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": {"bench": "sets"}},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "app", "image": "registry.example/app:1"}],
                },
            },
        },
    }


def daemonset(name: str, nodes: int) -> dict[str, Any]:
    """RollingUpdate with ``maxUnavailable`` :data:`DS_MAX_UNAVAILABLE`, no surge, on the
    nodes labelled for ``nodes`` (:data:`POOL_LABEL`)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "labels": {"bench": "sets"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": DS_MAX_UNAVAILABLE, "maxSurge": 0},
            },
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {POOL_LABEL.format(nodes=nodes): "true"},
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "app", "image": "registry.example/app:1"}],
                },
            },
        },
    }


def template_patch(round_: int) -> dict[str, Any]:
    """A merge patch that changes the pod template (an annotation): every pod is replaced."""
    return {
        "spec": {
            "template": {"metadata": {"annotations": {"bench.kcontrol.io/round": str(round_)}}}
        }
    }


def is_rolled_out(size: Size, obj: dict[str, Any], generation: int) -> bool:
    """Whether a set has seen its spec of ``generation`` (or later) and every pod is of its
    current template and ready.

    - StatefulSet: ``observedGeneration``, ``replicas == readyReplicas == availableReplicas
      == updatedReplicas == spec.replicas`` and ``currentRevision == updateRevision``;
    - DaemonSet: ``observedGeneration``, ``desiredNumberScheduled`` = K and
      ``currentNumberScheduled == updatedNumberScheduled == numberReady == numberAvailable``
      = K, nothing misscheduled or unavailable.
    """
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    current = int(metadata.get("generation") or 0)
    if current < generation or int(status.get("observedGeneration") or 0) < current:
        return False
    if size.kind == STS:
        replicas = int((obj.get("spec") or {}).get("replicas", 1))
        counts = ("replicas", "readyReplicas", "availableReplicas", "updatedReplicas")
        return (
            all(int(status.get(c) or 0) == replicas for c in counts)
            and bool(status.get("updateRevision"))
            and status.get("currentRevision") == status.get("updateRevision")
        )
    counts = (
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "updatedNumberScheduled",
        "numberReady",
        "numberAvailable",
    )
    return (
        all(int(status.get(c) or 0) == size.n for c in counts)
        and not status.get("numberMisscheduled")
        and not status.get("numberUnavailable")
    )


def spare_nodes(sizes: Sequence[Size]) -> int:
    """Unlabelled kwok nodes the cluster starts with: room for the largest StatefulSet size's
    pods at once, plus one (the pool nodes take pods too, this is a floor)."""
    pods = max((s.pods for s in sizes if s.kind == STS), default=0)
    return math.ceil(pods / PODS_PER_NODE) + 1


def node_pools(sizes: Sequence[Size]) -> list[tuple[int, dict[str, str]]]:
    """The DaemonSet nodes to create, as batches ``(count, labels)``: the first K nodes carry
    the pool label of every ``ds=MxK`` size with K at least their rank, so each size's
    DaemonSets select exactly K nodes."""
    pools = sorted({s.n for s in sizes if s.kind == DS})
    batches, made = [], 0
    for i, k in enumerate(pools):
        labels = {POOL_LABEL.format(nodes=p): "true" for p in pools[i:]}
        batches.append((k - made, labels))
        made = k
    return batches
