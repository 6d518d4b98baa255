"""The DaemonSet controller: informers, event handlers and the runner (the wiring of
upstream ``daemon_controller.go``, Kubernetes 1.36). The handlers only decide which DaemonSet
keys to queue and keep the expectations current; :class:`~._sync.DaemonSetSyncer` does the
work.

What queues a DaemonSet ``namespace/name``:

- the DaemonSet is added, updated or deleted (a delete, or an update showing a new UID under
  the same name, also drops its expectations);
- a ControllerRevision it controls is updated or deleted, or an orphan revision its selector
  matches is added or changes labels or owner (to adopt it);
- a pod it controls is added (a creation observed), changes, is deleted or starts
  terminating (a deletion observed); an orphan pod its selector matches is added or changes
  labels or owner; a pod it controls became ready while ``minReadySeconds > 0``: again after
  ``minReadySeconds`` + 1 s;
- a node is added on which it should run; a node's labels or taints change so that whether
  it should run there, or keep running there, changes (other node updates - the kubelet's
  status heartbeats above all - are ignored); a node on which it ran or should run is deleted.

The failed-pods backoff is swept every :data:`~._names.BACKOFF_GC_INTERVAL` seconds while
the controller runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import CONTROLLERREVISIONS, DAEMONSETS, NODES, PODS, Client, Object
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import (
    ConsistencyStore,
    Controller,
    ControllerExpectations,
    ControllerOptions,
    Result,
    get_controller_of,
    key_func,
    resolve_controller_ref,
)
from kcontrol.errors import SelectorError
from kcontrol.events import EventRecorder
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deleted_object,
)
from kcontrol.labels import selector_from_label_selector
from kcontrol.logging import get_logger

from ..history import CONTROLLER_REVISION_CONTROLLER_INDEX, controller_revision_index_func
from ..podcontrol import PodControl
from ..podutil import (
    POD_CONTROLLER_INDEX,
    ensure_index,
    is_pod_ready,
    pod_controller_index_func,
)
from ._backoff import FailedPodsBackoff
from ._history import DAEMON_SET_KIND, DaemonSetHistory
from ._manage import DaemonPodsManager
from ._metrics import metrics_for
from ._names import BACKOFF_GC_INTERVAL, BURST_REPLICAS, DEFAULT_WORKERS, QUEUE_NAME
from ._placement import node_should_run_daemon_pod
from ._sync import DaemonSetSyncer

__all__ = ["DaemonSetsController", "should_ignore_node_update"]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def should_ignore_node_update(old: Mapping[str, Any], cur: Mapping[str, Any]) -> bool:
    """True when nothing a DaemonSet's placement reads changed: the labels and the taints
    (upstream ``shouldIgnoreNodeUpdate``)."""
    return (_meta(old).get("labels") or {}) == (_meta(cur).get("labels") or {}) and (
        (old.get("spec") or {}).get("taints") or []
    ) == ((cur.get("spec") or {}).get("taints") or [])


class DaemonSetsController:
    """Runs one daemon pod per eligible node for every DaemonSet.

    Built from shared ``informers`` (DaemonSets, ControllerRevisions, pods, nodes; it adds the
    ``podController`` index to pods and the controller index to revisions), a ``client``,
    and a ``recorder`` whose source is ``daemonset-controller``. ``workers`` keys sync at
    once; each sync creates and deletes at most ``burst_replicas`` pods; failures are retried
    with the default controller rate limiter, forever. ``stale_cache_consistency`` holds a
    sync back until the informers saw the controller's own writes
    (``StaleControllerConsistencyDaemonSet``, on as in 1.36); ``consistency`` replaces the
    store that check uses (by default one reading how far the three informers got).

    :meth:`run` blocks until cancelled. Handlers and :meth:`sync` are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        workers: int = DEFAULT_WORKERS,
        burst_replicas: int = BURST_REPLICAS,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        stale_cache_consistency: bool = True,
        consistency: ConsistencyStore | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        ds_informer = informers.for_resource(DAEMONSETS)
        history_informer = informers.for_resource(CONTROLLERREVISIONS)
        pod_informer = informers.for_resource(PODS)
        node_informer = informers.for_resource(NODES)
        ensure_index(pod_informer, POD_CONTROLLER_INDEX, pod_controller_index_func)
        ensure_index(
            history_informer, CONTROLLER_REVISION_CONTROLLER_INDEX, controller_revision_index_func
        )
        self._ds_lister = ds_informer.lister()
        self.expectations = ControllerExpectations(clock=self._clock)
        self.failed_pods_backoff = FailedPodsBackoff(self._clock)
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                has_synced=[
                    pod_informer.has_synced,
                    node_informer.has_synced,
                    history_informer.has_synced,
                    ds_informer.has_synced,
                ],
                sync_timeout=sync_timeout,
                max_retries=None,
                clock=self._clock,
                registry=registry,
            )
        )
        self.metrics = metrics_for(registry)
        if consistency is None:
            trackers = {
                PODS: lambda: pod_informer.last_sync_resource_version,
                DAEMONSETS: lambda: ds_informer.last_sync_resource_version,
                CONTROLLERREVISIONS: lambda: history_informer.last_sync_resource_version,
            }
            consistency = ConsistencyStore(trackers if stale_cache_consistency else {})
        self.consistency = consistency
        pod_control = PodControl(
            client, recorder, on_write=partial(self.consistency.wrote_owned, PODS)
        )
        manager = DaemonPodsManager(
            expectations=self.expectations,
            pod_control=pod_control,
            recorder=recorder,
            backoff=self.failed_pods_backoff,
            enqueue_after=self.controller.enqueue_after,
            burst_replicas=burst_replicas,
        )
        self._syncer = DaemonSetSyncer(
            client=client,
            ds_lister=self._ds_lister,
            node_lister=node_informer.lister(),
            pod_indexer=pod_informer.indexer,
            history=DaemonSetHistory(client, history_informer.indexer),
            manager=manager,
            expectations=self.expectations,
            consistency=self.consistency,
            metrics=self.metrics,
            recorder=recorder,
            clock=self._clock,
        )
        ds_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_daemon_set,
                update_func=self.update_daemon_set,
                delete_func=self.delete_daemon_set,
            )
        )
        history_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_history,
                update_func=self.update_history,
                delete_func=self.delete_history,
            )
        )
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod
            )
        )
        node_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_node, update_func=self.update_node, delete_func=self.delete_node
            )
        )

    async def run(self) -> None:
        """Wait for the caches, then sync with the workers and sweep the failed-pods backoff,
        until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.controller.run())
            group.create_task(self._sweep_backoff())

    async def _sweep_backoff(self) -> None:
        while True:
            await self._clock.sleep(BACKOFF_GC_INTERVAL)
            self.failed_pods_backoff.gc()

    async def sync(self, key: str) -> Result | None:
        """Sync one DaemonSet (:class:`~kcontrol_controllers.daemonset._sync.DaemonSetSyncer`)."""
        return await self._syncer.sync(key)

    # -- lookups ---------------------------------------------------------------------------------

    def _enqueue(self, ds: Mapping[str, Any]) -> None:
        self.controller.enqueue(key_func(ds))

    def _resolve(self, namespace: str, controller_ref: Mapping[str, Any]) -> Object | None:
        return resolve_controller_ref(self._ds_lister, namespace, controller_ref, DAEMON_SET_KIND)

    def _selecting(self, obj: Mapping[str, Any]) -> list[Object]:
        """The DaemonSets of ``obj``'s namespace whose selector matches its labels (upstream
        ``GetPodDaemonSets`` / ``GetHistoryDaemonSets``); an empty or invalid selector
        matches nothing."""
        labels = _meta(obj).get("labels") or {}
        found = []
        for ds in self._ds_lister.list(_meta(obj).get("namespace") or ""):
            try:
                selector = selector_from_label_selector((ds.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if not selector.empty() and selector.matches(labels):
                found.append(ds)
        if len(found) > 1:
            _log.info("more than one DaemonSet selects an object", labels=labels)
        return found

    # -- DaemonSets ------------------------------------------------------------------------------

    def add_daemon_set(self, ds: Object) -> None:
        self._enqueue(ds)

    def update_daemon_set(self, old: Object, cur: Object) -> None:
        if _meta(cur).get("uid") != _meta(old).get("uid"):
            self.delete_daemon_set(DeletedFinalStateUnknown(key_func(old), old))
        self._enqueue(cur)

    def delete_daemon_set(self, obj: Any) -> None:
        """Forget the DaemonSet's expectations, so a new one of that name starts clean."""
        ds = deleted_object(obj, "DaemonSet")
        if ds is None:
            return
        key = key_func(ds)
        self.expectations.delete_expectations(key)
        self.consistency.clear(key, _meta(ds).get("uid"))
        self.controller.enqueue(key)

    # -- ControllerRevisions ---------------------------------------------------------------------

    def add_history(self, revision: Object) -> None:
        if _meta(revision).get("deletionTimestamp") is not None:
            self.delete_history(revision)
            return
        ref = get_controller_of(revision)
        if ref is not None:
            return  # upstream only logs its own revisions appearing
        for ds in self._selecting(revision):
            self._enqueue(ds)

    def update_history(self, old: Object, cur: Object) -> None:
        if _meta(cur).get("resourceVersion") == _meta(old).get("resourceVersion"):
            return
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        namespace = str(_meta(cur).get("namespace") or "")
        if cur_ref != old_ref and old_ref is not None:
            old_ds = self._resolve(namespace, old_ref)
            if old_ds is not None:
                self._enqueue(old_ds)
        if cur_ref is not None:
            ds = self._resolve(namespace, cur_ref)
            if ds is not None:
                self._enqueue(ds)
            return
        labels_changed = _meta(cur).get("labels") != _meta(old).get("labels")
        if labels_changed or cur_ref != old_ref:
            for ds in self._selecting(cur):
                self._enqueue(ds)

    def delete_history(self, obj: Any) -> None:
        revision = deleted_object(obj, "ControllerRevision")
        if revision is None:
            return
        ref = get_controller_of(revision)
        if ref is None:
            return
        ds = self._resolve(str(_meta(revision).get("namespace") or ""), ref)
        if ds is not None:
            self._enqueue(ds)

    # -- pods ------------------------------------------------------------------------------------

    def add_pod(self, pod: Object) -> None:
        """Observe the creation for the pod's DaemonSet, or queue the DaemonSets that might
        adopt an orphan."""
        if _meta(pod).get("deletionTimestamp") is not None:
            self.delete_pod(pod)  # seen first while terminating: never a creation
            return
        ref = get_controller_of(pod)
        if ref is not None:
            ds = self._resolve(str(_meta(pod).get("namespace") or ""), ref)
            if ds is None:
                return
            key = key_func(ds)
            self.expectations.creation_observed(key)
            self.controller.enqueue(key)
            return
        for ds in self._selecting(pod):
            self._enqueue(ds)

    def update_pod(self, old: Object, cur: Object) -> None:
        old_meta, cur_meta = _meta(old), _meta(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return
        if cur_meta.get("deletionTimestamp") is not None:
            self.delete_pod(cur)  # graceful deletion starts: act now
            return
        namespace = str(cur_meta.get("namespace") or "")
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            old_ds = self._resolve(namespace, old_ref)
            if old_ds is not None:
                self._enqueue(old_ds)
        if cur_ref is not None:
            ds = self._resolve(namespace, cur_ref)
            if ds is None:
                return
            self._enqueue(ds)
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                self.controller.enqueue_after(key_func(ds), float(min_ready) + 1.0)
            return
        if (cur_meta.get("labels") != old_meta.get("labels")) or cur_ref != old_ref:
            for ds in self._selecting(cur):
                self._enqueue(ds)

    def delete_pod(self, obj: Any) -> None:
        """Observe the deletion for the pod's DaemonSet and queue it; orphans are ignored."""
        pod = deleted_object(obj, "Pod")
        if pod is None:
            return
        ref = get_controller_of(pod)
        if ref is None:
            return
        ds = self._resolve(str(_meta(pod).get("namespace") or ""), ref)
        if ds is None:
            return
        key = key_func(ds)
        self.expectations.deletion_observed(key)
        self.controller.enqueue(key)

    # -- nodes -----------------------------------------------------------------------------------

    def add_node(self, node: Object) -> None:
        for ds in self._ds_lister.list():
            if node_should_run_daemon_pod(node, ds).should_run:
                self._enqueue(ds)

    def update_node(self, old: Object, cur: Object) -> None:
        if should_ignore_node_update(old, cur):
            return
        for ds in self._ds_lister.list():
            if node_should_run_daemon_pod(old, ds) != node_should_run_daemon_pod(cur, ds):
                self._enqueue(ds)

    def delete_node(self, obj: Any) -> None:
        """Not in upstream, which waits for the pod garbage collector's deletions: queue the
        DaemonSets that counted the node, so their status drops it at once."""
        node = deleted_object(obj, "Node")
        if node is None:
            return
        for ds in self._ds_lister.list():
            placement = node_should_run_daemon_pod(node, ds)
            if placement.should_run or placement.should_continue_running:
                self._enqueue(ds)
