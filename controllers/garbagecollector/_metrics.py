"""The garbage collector's metric, by upstream's name (``metrics/metrics.go``).

Its three queues export the ``workqueue_*`` series under upstream's queue names
(:mod:`._names`)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from kcontrol.controller import PerRegistry

__all__ = ["GCMetrics", "metrics_for"]


class GCMetrics:
    """``garbagecollector_controller_resources_sync_error_total``: failed discovery reads of
    the monitors' re-sync. Registered on ``registry`` (default: the global one), once per
    registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.resources_sync_error = Counter(
            "garbagecollector_controller_resources_sync_error",
            "Number of garbage collector resources sync errors",
            registry=registry if registry is not None else REGISTRY,
        )


metrics_for = PerRegistry(GCMetrics).get
"""The collector's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one
registry."""
