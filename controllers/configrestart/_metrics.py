"""The config-restart controller's metrics, with xing's names (``deployment_restart_controller_
*``) so existing dashboards and alerts carry over. "Deployments" there means every workload
kind (Deployments, StatefulSets, DaemonSets). The runner and its queue add theirs
(``controller_runtime_*{controller="configrestart"}``, ``workqueue_*{name="configrestart"}``).
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from kcontrol.controller import PerRegistry

__all__ = ["ConfigRestartMetrics", "metrics_for"]

_PREFIX = "deployment_restart_controller_"


class ConfigRestartMetrics:
    """Registered on ``registry`` (default: the global one), once per registry.

    Counters are declared without ``_total``: prometheus-client appends it, so the series
    are ``..._resource_versions_total`` etc. as xing's; the three gauges carry ``_total`` in
    their name as xing's do.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else REGISTRY
        self.resource_versions = Counter(
            _PREFIX + "resource_versions",
            "The number of distinct resource versions observed.",
            registry=registry,
        )
        self.configs = Gauge(
            _PREFIX + "configs_total", "The number of tracked configs.", registry=registry
        )
        self.deployments = Gauge(
            _PREFIX + "deployments_total",
            "The number of tracked deployments (Deployments, StatefulSets, DaemonSets).",
            registry=registry,
        )
        self.annotation_updates = Counter(
            _PREFIX + "deployment_annotation_updates",
            "The number of deployment annotation updates.",
            registry=registry,
        )
        self.restarts = Counter(
            _PREFIX + "deployment_restarts",
            "The number of deployment restarts triggered.",
            registry=registry,
        )
        self.changes_processed = Counter(
            _PREFIX + "changes_processed",
            "The number of resource changes processed.",
            registry=registry,
        )
        self.changes_waiting = Gauge(
            _PREFIX + "changes_waiting_total",
            "The number of changes waiting in the queue.",
            registry=registry,
        )


metrics_for = PerRegistry(ConfigRestartMetrics).get
"""The controller's metrics on a registry (``None``: the global one), created the first time
that registry is asked for: a manager may build the controller more than once on one registry
(a sharded kcontrol-manager does whenever its shards change)."""
