"""The CronJob controller's own metric, with upstream's name
(``pkg/controller/cronjob/metrics``). The queue and the runner add theirs
(``workqueue_*{name="cronjob"}``, ``controller_runtime_*``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Histogram

from kcontrol.controller import PerRegistry

__all__ = ["CREATION_SKEW_BUCKETS", "CronJobMetrics", "metrics_for"]

CREATION_SKEW_BUCKETS = tuple(float(2**i) for i in range(10))
"""Upstream's ``ExponentialBuckets(1, 2, 10)``: 1 s up to 512 s."""


class CronJobMetrics:
    """``cronjob_controller_job_creation_skew_duration_seconds`` (histogram, STABLE
    upstream): for each Job created, the seconds from the time it was scheduled for to its
    ``creationTimestamp``.

    Registered on ``registry`` (default: the global one), once per registry.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.job_creation_skew = Histogram(
            "cronjob_controller_job_creation_skew_duration_seconds",
            "Time between when a cronjob is scheduled to be run, and when the corresponding "
            "job is created",
            buckets=CREATION_SKEW_BUCKETS,
            registry=registry if registry is not None else REGISTRY,
        )

    def observe_creation_skew(self, seconds: float) -> None:
        self.job_creation_skew.observe(seconds)


metrics_for = PerRegistry(CronJobMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one registry
(a sharded kcontrol-manager does whenever its shards change)."""
