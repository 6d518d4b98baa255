"""The pod garbage collector: kube-controller-manager's ``pkg/controller/podgc``
(``gc_controller.go``, Kubernetes 1.36) - wiring and the periodic loop.

Upstream's controller has no work queue of objects: once the pod and node caches have
synced, it runs one collection (:class:`~kcontrol_controllers.podgc._gc.GarbageCollector`)
every ``gcCheckPeriod`` (20 s), the period counted from the end of the previous one
(``wait.UntilWithContext``). So does this one: :meth:`PodGCController.run` is the loop, and
nothing is queued by events - the informers only keep the caches a collection reads. The
quarantine of missing nodes is a delaying queue (``orphaned_pods_nodes``) that lives as long
as the controller.

Under kcontrol-manager's sharding (``--shards=N``) each replica runs the collector over what
it caches and may write: the pods of the namespaces in its shards (the pod informer selects
them, and the write gate refuses any other namespace), against every node (nodes are
cluster-scoped and cached whole by every replica). The per-pod passes then cover every pod
exactly once across the replicas; ``--terminated-pod-gc-threshold`` applies to each
replica's share of the terminated pods (docs/controllers/podgc.md). The loop is not a
queue worker, so :func:`~kcontrol.controller.guarded_by` does not reach it: the manager
runs it only while leading, and the write gate of its client refuses its writes once the
Lease is no longer trusted.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kcontrol.client import NODES, PODS, Client
from kcontrol.clock import Clock, RealClock
from kcontrol.informers import SharedInformerFactory
from kcontrol.logging import get_logger
from kcontrol.workqueue import DelayingQueue

from ._gc import GarbageCollector
from ._metrics import metrics_for
from ._names import (
    DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    GC_CHECK_PERIOD,
    NAME,
    NODE_QUEUE_NAME,
    QUARANTINE_TIME,
)

__all__ = ["PodGCController"]

_log = get_logger(__name__, controller=NAME)


class PodGCController:
    """Deletes terminated pods beyond a threshold, and force-deletes orphaned, unscheduled
    terminating and out-of-service terminating pods, every ``gc_check_period`` seconds.

    Built from shared ``informers`` (pods and nodes, all namespaces) and a ``client`` that
    patches pod status, deletes pods and reads nodes. ``terminated_pod_threshold`` is
    ``--terminated-pod-gc-threshold`` (``<= 0``: no terminated-pod pass);
    ``gc_check_period`` and ``quarantine_time`` are upstream's constants, settable here as
    upstream's ``NewPodGCInternal`` allows for tests. ``clock`` drives the loop, the
    quarantine and the conditions' times; ``registry`` takes the metrics.

    :meth:`run` blocks until cancelled. :attr:`collector` is public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_GC_THRESHOLD,
        gc_check_period: float = GC_CHECK_PERIOD,
        quarantine_time: float = QUARANTINE_TIME,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        cache_sync_period: float = 0.1,
    ) -> None:
        if gc_check_period <= 0:
            raise ValueError(f"gc_check_period must be > 0, got {gc_check_period}")
        self._clock: Clock = clock if clock is not None else RealClock()
        self._period = gc_check_period
        self._cache_sync_period = cache_sync_period
        pod_informer = informers.for_resource(PODS)
        node_informer = informers.for_resource(NODES)
        self._has_synced = (pod_informer.has_synced, node_informer.has_synced)
        self._quarantine: DelayingQueue[str] = DelayingQueue(
            name=NODE_QUEUE_NAME, clock=self._clock, registry=registry
        )
        self.collector = GarbageCollector(
            client=client,
            pods=pod_informer.lister(),
            nodes=node_informer.lister(),
            quarantine=self._quarantine,
            terminated_pod_threshold=terminated_pod_threshold,
            quarantine_time=quarantine_time,
            clock=self._clock,
            metrics=metrics_for(registry),
        )

    async def run(self) -> None:
        """Wait for the pod and node caches, then collect every ``gc_check_period`` seconds
        until cancelled. A collection that fails is logged; the next one runs on time."""
        _log.info("Starting controller")
        try:
            while not all(synced() for synced in self._has_synced):
                await self._clock.sleep(self._cache_sync_period)
            _log.info("caches are synced", period=self._period)
            while True:
                try:
                    await self.collector.gc()
                except Exception:  # one collection's failure never stops the loop
                    _log.exception("pod garbage collection failed")
                await self._clock.sleep(self._period)
        finally:
            self._quarantine.shutdown()
            _log.info("Shutting down controller")
