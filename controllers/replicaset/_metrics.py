"""The ReplicaSet controller's own metrics, with upstream's names (``pkg/controller/replicaset/
metrics``). The queue and the runner add theirs (``workqueue_*{name="replicaset"}``,
``controller_runtime_*``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from kcontrol.controller import PerRegistry

__all__ = ["ReplicaSetMetrics", "metrics_for"]


class ReplicaSetMetrics:
    """``replicaset_controller_sorting_deletion_age_ratio`` (histogram): for each ready pod
    chosen for deletion while others are kept, its age over the youngest ready pod's age;
    ``replicaset_controller_stale_sync_skips_total{group,resource}``: syncs put off because
    an informer had not seen the controller's own writes yet.

    Registered on ``registry`` (default: the global one), once per registry.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else REGISTRY
        self.sorting_deletion_age_ratio = Histogram(
            "replicaset_controller_sorting_deletion_age_ratio",
            "The ratio of chosen deleted pod's ages to the current youngest pod's age (at the "
            "time). Should be <2. The intent of this metric is to measure the rough efficacy "
            "of the LogarithmicScaleDown feature gate's effect on the sorting (and deletion) "
            "of pods when a replicaset scales down. This only considers Ready pods when "
            "calculating and reporting.",
            buckets=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
            registry=registry,
        )
        self.stale_sync_skips = Counter(
            "replicaset_controller_stale_sync_skips",
            "Total number of ReplicaSet syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry,
        )

    def observe_deletion_age_ratio(self, ratio: float) -> None:
        self.sorting_deletion_age_ratio.observe(ratio)

    def stale_sync_skipped(self, group: str, resource: str) -> None:
        self.stale_sync_skips.labels(group=group, resource=resource).inc()


metrics_for = PerRegistry(ReplicaSetMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one registry
(a sharded kcontrol-manager does whenever its shards change)."""
