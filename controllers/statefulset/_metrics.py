"""The StatefulSet controller's own metrics, with upstream's names
(``pkg/controller/statefulset/metrics``). The queue and the runner add theirs
(``workqueue_*{name="statefulset"}``, ``controller_runtime_*``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from kcontrol.controller import PerRegistry

__all__ = ["StatefulSetMetrics", "metrics_for"]

_SET_LABELS = ["statefulset_namespace", "statefulset_name", "pod_management_policy"]


class StatefulSetMetrics:
    """``statefulset_controller_statefulset_max_unavailable`` and
    ``statefulset_controller_statefulset_unavailable_replicas`` (gauges per set, written by a
    rolling update under MaxUnavailableStatefulSet, as upstream);
    ``statefulset_controller_stale_sync_skips_total{group,resource}``: syncs put off because
    an informer had not seen the controller's own writes yet.

    Registered on ``registry`` (default: the global one), once per registry.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else REGISTRY
        self.max_unavailable = Gauge(
            "statefulset_controller_statefulset_max_unavailable",
            "Maximum number of unavailable pods allowed during StatefulSet rolling updates",
            _SET_LABELS,
            registry=registry,
        )
        self.unavailable_replicas = Gauge(
            "statefulset_controller_statefulset_unavailable_replicas",
            "Current number of unavailable pods in StatefulSet",
            _SET_LABELS,
            registry=registry,
        )
        self.stale_sync_skips = Counter(
            "statefulset_controller_stale_sync_skips",
            "Total number of StatefulSet syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=registry,
        )

    def set_max_unavailable(self, namespace: str, name: str, policy: str, value: int) -> None:
        self.max_unavailable.labels(namespace, name, policy).set(value)

    def set_unavailable_replicas(self, namespace: str, name: str, policy: str, value: int) -> None:
        self.unavailable_replicas.labels(namespace, name, policy).set(value)

    def stale_sync_skipped(self, group: str, resource: str) -> None:
        self.stale_sync_skips.labels(group=group, resource=resource).inc()


_PER_REGISTRY = PerRegistry(StatefulSetMetrics)


def metrics_for(registry: CollectorRegistry | None) -> StatefulSetMetrics:
    """The controller's metrics on ``registry`` (``None``: the global one), created the first
    time that registry is asked for: a manager may build the controller more than once."""
    return _PER_REGISTRY.get(registry)
