"""The Job controller's own metrics, with kube-controller-manager's names and labels
(``pkg/controller/job/metrics``). The queues and the runner add theirs
(``workqueue_*{name="job"}``, ``workqueue_*{name="job_orphan_pod"}``, ``controller_runtime_*``).
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from kcontrol.controller import PerRegistry

__all__ = [
    "ACTION_PODS_CREATED",
    "ACTION_PODS_DELETED",
    "ACTION_RECONCILING",
    "ACTION_TRACKING",
    "CREATE_NEW",
    "RECREATE_FAILED",
    "RECREATE_TERMINATING_OR_FAILED",
    "JobMetrics",
    "metrics_for",
]

# The ``action`` label of the sync metrics.
ACTION_RECONCILING = "reconciling"
"""Expectations were not satisfied: the sync only tracked status."""
ACTION_TRACKING = "tracking"
"""Nothing was created or deleted."""
ACTION_PODS_CREATED = "pods_created"
ACTION_PODS_DELETED = "pods_deleted"

# The ``reason`` label of job_pods_creation_total.
CREATE_NEW = "new"
RECREATE_TERMINATING_OR_FAILED = "recreate_terminating_or_failed"
RECREATE_FAILED = "recreate_failed"


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(count))


class JobMetrics:
    """The ``job_controller_*`` metrics, registered on ``registry`` (default: the global one),
    once per registry:

    - ``job_sync_duration_seconds`` / ``job_syncs_total`` ``{completion_mode, result, action}``;
    - ``jobs_finished_total{completion_mode, result, reason}``;
    - ``jobs_by_external_controller_total{controller_name}``: Jobs seen with another manager;
    - ``job_pods_finished_total{completion_mode, result}``: pods fully counted;
    - ``pod_failures_handled_by_failure_policy_total{action}``;
    - ``terminated_pods_tracking_finalizer_total{event}``: finished pods gaining (``add``) or
      losing (``delete``) the tracking finalizer, whoever owns them;
    - ``job_finished_indexes_total{status, backoffLimit}``;
    - ``job_pods_creation_total{reason, status}``;
    - ``stale_sync_skips_total{group, resource}``: syncs put off for a stale cache.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else REGISTRY
        sync_labels = ["completion_mode", "result", "action"]
        self.sync_duration = Histogram(
            "job_controller_job_sync_duration_seconds",
            "The time it took to sync a job",
            sync_labels,
            buckets=_exponential_buckets(0.004, 2, 15),
            registry=registry,
        )
        self.syncs = Counter(
            "job_controller_job_syncs", "The number of job syncs", sync_labels, registry=registry
        )
        self.jobs_finished = Counter(
            "job_controller_jobs_finished",
            "The number of finished jobs",
            ["completion_mode", "result", "reason"],
            registry=registry,
        )
        self.jobs_by_external_controller = Counter(
            "job_controller_jobs_by_external_controller",
            "The number of Jobs managed by an external controller",
            ["controller_name"],
            registry=registry,
        )
        self.pods_finished = Counter(
            "job_controller_job_pods_finished",
            "The number of finished Pods that are fully tracked",
            ["completion_mode", "result"],
            registry=registry,
        )
        self.pod_failures_handled_by_failure_policy = Counter(
            "job_controller_pod_failures_handled_by_failure_policy",
            "The number of failed Pods handled by failure policy with respect to the failure "
            "policy action applied based on the matched rule.",
            ["action"],
            registry=registry,
        )
        self.terminated_pods_tracking_finalizer = Counter(
            "job_controller_terminated_pods_tracking_finalizer",
            "The number of terminated pods (phase=Failed|Succeeded) that have the finalizer "
            "batch.kubernetes.io/job-tracking",
            ["event"],
            registry=registry,
        )
        self.finished_indexes = Counter(
            "job_controller_job_finished_indexes",
            "The number of finished indexes.",
            ["status", "backoffLimit"],
            registry=registry,
        )
        self.pods_creation = Counter(
            "job_controller_job_pods_creation",
            "The number of Pods created by the Job controller labelled with a reason for the "
            "Pod creation.",
            ["reason", "status"],
            registry=registry,
        )
        self.stale_sync_skips = Counter(
            "job_controller_stale_sync_skips",
            "Total number of Job syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry,
        )

    def observe_sync(self, completion_mode: str, result: str, action: str, seconds: float) -> None:
        self.sync_duration.labels(completion_mode, result, action).observe(seconds)
        self.syncs.labels(completion_mode, result, action).inc()

    def finished_pod_tracking_changed(self, was: bool, now: bool) -> None:
        """A pod event changed whether it is a finished pod with the tracking finalizer."""
        if was != now:
            self.terminated_pods_tracking_finalizer.labels("add" if now else "delete").inc()


metrics_for = PerRegistry(JobMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one registry
(a sharded kcontrol-manager does whenever its shards change)."""
