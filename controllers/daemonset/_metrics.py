"""The DaemonSet controller's own metric, with upstream's name (Kubernetes 1.36
``pkg/controller/daemon/metrics``). The queue and the runner add theirs
(``workqueue_*{name="daemonset"}``, ``controller_runtime_*``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from kcontrol.controller import PerRegistry

__all__ = ["DaemonSetMetrics", "metrics_for"]


class DaemonSetMetrics:
    """``daemonset_controller_stale_sync_skips_total{group,resource}``: syncs put off because
    an informer had not seen the controller's own writes yet. Registered on ``registry``
    (default: the global one), once per registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.stale_sync_skips = Counter(
            "daemonset_controller_stale_sync_skips",
            "Total number of DaemonSet syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry if registry is not None else REGISTRY,
        )

    def stale_sync_skipped(self, group: str, resource: str) -> None:
        self.stale_sync_skips.labels(group=group, resource=resource).inc()


metrics_for = PerRegistry(DaemonSetMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created once per
registry."""
