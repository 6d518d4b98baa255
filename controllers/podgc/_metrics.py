"""The pod garbage collector's metrics, with upstream's names
(``pkg/controller/podgc/metrics``). The quarantine queue adds ``workqueue_*`` series under
``name="orphaned_pods_nodes"``."""

from __future__ import annotations

from typing import Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from kcontrol.controller import PerRegistry

__all__ = [
    "REASON_ORPHANED",
    "REASON_TERMINATED",
    "REASON_TERMINATING_OUT_OF_SERVICE",
    "REASON_TERMINATING_UNSCHEDULED",
    "PodGCMetrics",
    "metrics_for",
]

REASON_TERMINATED: Final = "terminated"
"""``reason`` of a pod deleted because terminated pods exceed the threshold."""
REASON_TERMINATING_OUT_OF_SERVICE: Final = "out-of-service"
"""``reason`` of a terminating pod force-deleted from a NotReady out-of-service node."""
REASON_ORPHANED: Final = "orphaned"
"""``reason`` of a pod deleted because its node no longer exists."""
REASON_TERMINATING_UNSCHEDULED: Final = "unscheduled"
"""``reason`` of a terminating pod deleted because it was never scheduled."""


class PodGCMetrics:
    """``pod_gc_collector_force_delete_pods_total{namespace, reason}``: pods the collector
    set out to delete (each attempt, failed or not, as upstream counts them), and
    ``pod_gc_collector_force_delete_pod_errors_total{namespace, reason}``: those attempts
    that failed.

    Registered on ``registry`` (default: the global one), once per registry.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else REGISTRY
        self.deleting_pods = Counter(
            "pod_gc_collector_force_delete_pods_total",
            "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            ["namespace", "reason"],
            registry=registry,
        )
        self.deleting_pod_errors = Counter(
            "pod_gc_collector_force_delete_pod_errors_total",
            "Number of errors encountered when forcefully deleting the pods since the Pod GC "
            "Controller started.",
            ["namespace", "reason"],
            registry=registry,
        )

    def deleting(self, namespace: str, reason: str) -> None:
        self.deleting_pods.labels(namespace, reason).inc()

    def failed(self, namespace: str, reason: str) -> None:
        self.deleting_pod_errors.labels(namespace, reason).inc()


metrics_for = PerRegistry(PodGCMetrics).get
"""The collector's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a sharded kcontrol-manager builds the controller anew whenever
its shards change, on one registry."""
