"""The TTL-after-finished controller's own metric, with upstream's name
(``pkg/controller/ttlafterfinished/metrics``). The queue and the runner add theirs
(``workqueue_*{name="ttl_jobs_to_delete"}``, ``controller_runtime_*``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Histogram

from kcontrol.controller import PerRegistry

__all__ = ["DELETION_DURATION_BUCKETS", "TTLAfterFinishedMetrics", "metrics_for"]

DELETION_DURATION_BUCKETS = tuple(0.1 * 2**i for i in range(14))
"""Upstream's ``ExponentialBuckets(0.1, 2, 14)``: 100 ms up to about 27 minutes."""


class TTLAfterFinishedMetrics:
    """``ttl_after_finished_controller_job_deletion_duration_seconds`` (histogram): for each
    Job deleted, the seconds from the expiry of its TTL to its deletion.

    Registered on ``registry`` (default: the global one), once per registry.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.job_deletion_duration = Histogram(
            "ttl_after_finished_controller_job_deletion_duration_seconds",
            "The time it took to delete the job since it became eligible for deletion",
            buckets=DELETION_DURATION_BUCKETS,
            registry=registry if registry is not None else REGISTRY,
        )

    def observe_deletion(self, seconds_since_expiry: float) -> None:
        self.job_deletion_duration.observe(seconds_since_expiry)


metrics_for = PerRegistry(TTLAfterFinishedMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one registry
(a sharded kcontrol-manager does whenever its shards change)."""
