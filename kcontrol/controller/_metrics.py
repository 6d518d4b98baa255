"""Prometheus metrics of controllers, with controller-runtime's names, labels and buckets.

A controller exports these in addition to its queue's ``workqueue_*`` families, so dashboards and
alerts written for controller-runtime operators work unchanged:

==============================================  =========  ===================================
``controller_runtime_reconcile_total``          counter    syncs by ``result``: ``success``,
                                                           ``error``, ``requeue``,
                                                           ``requeue_after``
``controller_runtime_reconcile_errors_total``   counter    syncs that raised (timeouts too)
``controller_runtime_reconcile_time_seconds``   histogram  duration of each sync
``controller_runtime_max_concurrent_reconciles`` gauge     configured number of workers
``controller_runtime_active_workers``           gauge      workers currently inside a sync
==============================================  =========  ===================================

Every family carries the label ``controller`` (the controller's name). The families are created
once per :class:`~prometheus_client.CollectorRegistry` and shared by every controller on it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kcontrol._registry import PerRegistry

__all__ = ["RECONCILE_TIME_BUCKETS", "ControllerMetrics", "SyncOutcome"]

RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    *(0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    *(6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)
"""Upper bounds (seconds) of ``controller_runtime_reconcile_time_seconds``: controller-runtime's,
so that dashboards built for Go operators read kcontrol's histograms unchanged."""


class SyncOutcome:
    """Values of the ``result`` label (controller-runtime's)."""

    SUCCESS = "success"
    ERROR = "error"
    REQUEUE = "requeue"
    REQUEUE_AFTER = "requeue_after"
    ALL = (SUCCESS, ERROR, REQUEUE, REQUEUE_AFTER)


class _Families:
    """The controller metric families registered on one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ("controller",),
            registry=registry,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ("controller",),
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.max_workers = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ("controller",),
            registry=registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ("controller",),
            registry=registry,
        )


_families = PerRegistry(_Families).get


class ControllerMetrics:
    """The series of one controller. Creating it initialises every series to zero, as
    controller-runtime does, so that rates over them exist before the first sync."""

    __slots__ = ("_active", "_errors", "_time", "_totals")

    def __init__(self, controller: str, workers: int, registry: CollectorRegistry | None) -> None:
        families = _families(registry)
        self._totals = {r: families.total.labels(controller, r) for r in SyncOutcome.ALL}
        self._errors = families.errors.labels(controller)
        self._time = families.time.labels(controller)
        self._active = families.active_workers.labels(controller)
        families.max_workers.labels(controller).set(workers)
        self._active.set(0)

    def sync_started(self) -> None:
        self._active.inc()

    def sync_finished(self, outcome: str, seconds: float) -> None:
        """Record one finished sync; ``outcome`` is one of :class:`SyncOutcome`."""
        self._active.dec()
        self._time.observe(seconds)
        self._totals[outcome].inc()
        if outcome == SyncOutcome.ERROR:
            self._errors.inc()
