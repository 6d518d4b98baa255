"""The disruption controller: kube-controller-manager's ``pkg/controller/disruption``
(``disruption.go``, Kubernetes 1.36) - informers, event handlers and the two queues.

What queues a PodDisruptionBudget ``namespace/name`` (queue ``disruption``):

- the PDB is added, updated or deleted;
- a pod its selector matches is added, updated or deleted (when several PDBs match the pod,
  one only - here the first by name - with a ``MultiplePodDisruptionBudgets`` warning on
  the pod, as upstream);
- an entry of its ``status.disruptedPods`` is about to expire: again when it does (the
  sync's ``requeue_after``; upstream's ``disruption_recheck`` queue).

What queues a pod ``namespace/name`` (queue ``stale_pod_disruption``): a pod added or updated
with a True ``DisruptionTarget`` condition that may become stale - after the time left until
it does (:mod:`._stale`).

The ReplicationController, ReplicaSet, Deployment and StatefulSet informers only feed the
finders' caches: a change of scale is seen at the next sync of the PDB (a pod event, or the
PDB's own), as upstream.

Under kcontrol-manager's sharding each replica holds the PDBs, pods and workloads of its
shards' namespaces (every one of them namespaced); the ``scale`` reads go to the API server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    STATEFULSETS,
    Client,
    Object,
)
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import Controller, ControllerOptions, Result, key_func
from kcontrol.events import EventRecorder
from kcontrol.informers import ResourceEventHandlerFuncs, SharedInformerFactory, deleted_object
from kcontrol.labels import SelectorError, selector_from_label_selector
from kcontrol.logging import get_logger

from ._finders import ControllerFinders, Finder
from ._names import NAME, QUEUE_NAME, STALE_POD_DISRUPTION_TIMEOUT, STALE_POD_QUEUE_NAME
from ._stale import StalePodDisruptionSyncer
from ._sync import PdbSyncer

__all__ = ["DisruptionController"]

_log = get_logger(__name__, controller=NAME)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class DisruptionController:
    """Keeps the status of every PodDisruptionBudget current, and clears stale
    ``DisruptionTarget`` pod conditions.

    Built from shared ``informers`` (pods, PDBs, ReplicationControllers, ReplicaSets,
    Deployments, StatefulSets), a ``client`` that writes PDB and pod statuses (and reads
    ``scale`` subresources through ``scale_finder``), and a ``recorder`` whose source is
    ``disruption-controller``. ``scale_finder`` is the last finder, for controller kinds
    other than the four built-in ones (``None``: such pods make the sync fail, as an unknown
    kind does upstream). ``stale_pod_disruption_timeout`` is upstream's constant, settable
    for tests; ``clock`` drives both queues, the disrupted-pod timeout and the conditions'
    times. Each queue has one worker, as upstream's.

    :meth:`run` blocks until cancelled. Handlers and the two syncers are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        scale_finder: Finder | None = None,
        stale_pod_disruption_timeout: float = STALE_POD_DISRUPTION_TIMEOUT,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._recorder = recorder
        pod_informer = informers.for_resource(PODS)
        pdb_informer = informers.for_resource(PODDISRUPTIONBUDGETS)
        workloads = [
            informers.for_resource(r)
            for r in (REPLICATIONCONTROLLERS, REPLICASETS, DEPLOYMENTS, STATEFULSETS)
        ]
        rc_informer, rs_informer, deployment_informer, sts_informer = workloads
        self._pdbs = pdb_informer.lister()
        has_synced = [pod_informer.has_synced, pdb_informer.has_synced]
        has_synced.extend(informer.has_synced for informer in workloads)
        self.finders = ControllerFinders(
            replication_controllers=rc_informer.lister(),
            replica_sets=rs_informer.lister(),
            deployments=deployment_informer.lister(),
            stateful_sets=sts_informer.lister(),
            scale=scale_finder,
        )
        self.pdb_syncer = PdbSyncer(
            client=client,
            pdbs=self._pdbs,
            pods=pod_informer.lister(),
            finders=self.finders,
            recorder=recorder,
            clock=self._clock,
        )
        self.stale_syncer = StalePodDisruptionSyncer(
            client=client,
            pods=pod_informer.lister(),
            clock=self._clock,
            timeout=stale_pod_disruption_timeout,
        )
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                has_synced=has_synced,
                sync_timeout=sync_timeout,
                clock=self._clock,
                registry=registry,
            )
        )
        self.stale_controller = Controller(
            ControllerOptions(
                name=STALE_POD_QUEUE_NAME,
                sync=self.sync_stale_pod,
                has_synced=has_synced,
                sync_timeout=sync_timeout,
                clock=self._clock,
                registry=registry,
            )
        )
        pdb_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_pdb, update_func=self.update_pdb, delete_func=self.delete_pdb
            )
        )
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod
            )
        )

    async def run(self) -> None:
        """Wait for the caches, then run both queues' workers until cancelled."""
        _log.info("Starting controller")
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.controller.run())
                group.create_task(self.stale_controller.run())
        finally:
            _log.info("Shutting down controller")

    async def sync(self, key: str) -> Result | None:
        """Sync one PDB; see :mod:`kcontrol_controllers.disruption._sync`."""
        return await self.pdb_syncer.sync(key)

    async def sync_stale_pod(self, key: str) -> Result | None:
        """Clear one pod's stale condition; see :mod:`kcontrol_controllers.disruption._stale`."""
        return await self.stale_syncer.sync(key)

    # -- PDB events ----------------------------------------------------------------------------

    def add_pdb(self, pdb: Object) -> None:
        self.controller.enqueue(key_func(pdb))

    def update_pdb(self, old: Object, cur: Object) -> None:
        self.controller.enqueue(key_func(cur))

    def delete_pdb(self, obj: Any) -> None:
        pdb = deleted_object(obj, "PodDisruptionBudget")
        if pdb is not None:
            self.controller.enqueue(key_func(pdb))

    # -- pod events ----------------------------------------------------------------------------

    def add_pod(self, pod: Object) -> None:
        self._enqueue_pdb_of(pod)
        self._enqueue_if_stale(pod)

    def update_pod(self, old: Object, cur: Object) -> None:
        self._enqueue_pdb_of(cur)
        self._enqueue_if_stale(cur)

    def delete_pod(self, obj: Any) -> None:
        pod = deleted_object(obj, "Pod")
        if pod is not None:
            self._enqueue_pdb_of(pod)

    def pdb_for_pod(self, pod: Mapping[str, Any]) -> Object | None:
        """The cached PDB of the pod's namespace whose selector matches the pod (an empty
        selector matches every pod, a missing or invalid one none); when several do, the
        first by name (upstream takes whichever its lister lists first) and a warning
        ``MultiplePodDisruptionBudgets`` on the pod."""
        namespace = str(_meta(pod).get("namespace") or "")
        labels = _meta(pod).get("labels") or {}
        matching: list[Object] = []
        for pdb in self._pdbs.list(namespace):
            try:
                selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                matching.append(pdb)
        if not matching:
            return None
        matching.sort(key=lambda pdb: str(_meta(pdb).get("name")))
        if len(matching) > 1:
            self._recorder.eventf(
                pod,
                "Warning",
                "MultiplePodDisruptionBudgets",
                'Pod "%s"/"%s" matches multiple PodDisruptionBudgets.  Chose "%s" arbitrarily.',
                namespace,
                _meta(pod).get("name"),
                _meta(matching[0]).get("name"),
            )
        return matching[0]

    def _enqueue_pdb_of(self, pod: Mapping[str, Any]) -> None:
        pdb = self.pdb_for_pod(pod)
        if pdb is not None:
            self.controller.enqueue(key_func(pdb))

    def _enqueue_if_stale(self, pod: Mapping[str, Any]) -> None:
        wait = self.stale_syncer.wait_for(pod)
        if wait is not None:
            self.stale_controller.enqueue_after(key_func(pod), wait)
