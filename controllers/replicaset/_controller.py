"""The ReplicaSet controller: informers, event handlers and the controller runner.

A port of the wiring and handlers of kube-controller-manager's ``replica_set.go``. The
handlers only decide *which* ReplicaSet keys to queue and keep the expectations current; the
work is done by :class:`~kcontrol_controllers.replicaset._sync.ReplicaSetSyncer`.

What queues a ReplicaSet ``namespace/name``:

- the ReplicaSet is added, updated (resyncs included; not for the controller's own status
  write coming back, :meth:`~kcontrol.controller.ConsistencyStore.is_own_status_write`) or
  deleted - a delete (or an update that shows a new UID under the same name) also drops its
  expectations;
- a pod it controls is added (a creation is observed), changes what a sync counts (labels,
  owner, phase, the Ready condition: :func:`~kcontrol_controllers.podutil.replica_state_changed`;
  not its node, IPs or container statuses, and an update to the same resourceVersion is a
  resync and ignored) or is deleted or starts terminating (a deletion is observed, counted
  once per expected pod; a pod already terminating queues again only on a terminal phase);
- an orphan pod its selector matches is added or changes labels or owner (to adopt it);
- a pod it controls became ready while ``minReadySeconds > 0``: again after
  ``minReadySeconds``, when it may have become available.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import PODS, Client, Object
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import (
    ConsistencyStore,
    Controller,
    ControllerOptions,
    Result,
    UIDTrackingControllerExpectations,
    get_controller_of,
    key_func,
)
from kcontrol.events import EventRecorder
from kcontrol.informers import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deleted_object,
    label_index,
)
from kcontrol.logging import get_logger

from ..podcontrol import PodControl
from ..podutil import (
    POD_CONTROLLER_INDEX,
    ensure_index,
    is_pod_ready,
    is_pod_terminal,
    pod_controller_index_func,
    pod_key,
    replica_state_changed,
)
from ._factory import CONCURRENT_SYNCS, SPEC, new_controller
from ._kind import REPLICA_SET, ReplicaKind
from ._lookup import (
    CONTROLLER_UID_INDEX,
    ReplicaSetLookup,
    controller_uid_index_func,
)
from ._manage import ReplicaManager
from ._metrics import metrics_for
from ._names import BURST_REPLICAS, NAME, QUEUE_NAME
from ._sync import ReplicaSetSyncer

__all__ = [
    "CONCURRENT_SYNCS",
    "NAME",
    "QUEUE_NAME",
    "SPEC",
    "ReplicaSetController",
    "new_controller",
]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class ReplicaSetController:
    """Keeps the number of pods of every ReplicaSet at ``spec.replicas``.

    Built from shared ``informers`` (ReplicaSets and pods, all namespaces; it adds the
    ``controllerUID`` index to the first and ``podController`` to the second), a ``client``
    to write pods and statuses, and a ``recorder`` whose source is
    ``replicaset-controller``. ``workers`` keys are synced at once, each acting on at most
    ``burst_replicas`` pods; failures are retried with the default controller rate limiter,
    forever. ``terminating_replicas`` writes ``status.terminatingReplicas``
    (``DeploymentReplicaSetTerminatingReplicas``); ``stale_cache_consistency`` holds a sync
    back until the informers saw the controller's own writes
    (``StaleControllerConsistencyReplicaSet``); both are on, as in Kubernetes 1.36.
    ``consistency`` replaces the store that check uses (by default one reading how far the
    two informers got).

    ``kind`` is what it manages: ReplicaSets, or - as upstream's replication manager, this
    controller on another kind - ReplicationControllers
    (:mod:`kcontrol_controllers.replicationcontroller`); a kind whose status has no
    ``terminatingReplicas`` turns ``terminating_replicas`` off.

    :meth:`run` blocks until cancelled. Handlers and :meth:`sync` are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        workers: int = 5,
        burst_replicas: int = BURST_REPLICAS,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        terminating_replicas: bool = True,
        stale_cache_consistency: bool = True,
        consistency: ConsistencyStore | None = None,
        sync_timeout: float | None = None,
        kind: ReplicaKind = REPLICA_SET,
    ) -> None:
        if burst_replicas < 1:
            raise ValueError(f"burst_replicas must be >= 1, got {burst_replicas}")
        self.kind = kind
        self._clock: Clock = clock if clock is not None else RealClock()
        rs_informer = informers.for_resource(kind.resource)
        pod_informer = informers.for_resource(PODS)
        ensure_index(rs_informer, CONTROLLER_UID_INDEX, controller_uid_index_func)
        ensure_index(pod_informer, POD_CONTROLLER_INDEX, pod_controller_index_func)
        if kind.sibling_pod_label is not None:
            # The ReplicaSets of a Deployment select their pods by pod-template-hash
            # (the kind's sibling_pod_label), so that a scale-down's look at its siblings' pods
            # (indirectly_related_pods) reads theirs rather than every pod of the namespace.
            ensure_index(pod_informer, *label_index(kind.sibling_pod_label))
        self._lookup = ReplicaSetLookup(
            rs_informer.lister(), rs_informer.indexer, pod_informer.lister(), kind=kind
        )
        self.expectations = UIDTrackingControllerExpectations(clock=self._clock)
        self.controller = Controller(
            ControllerOptions(
                name=kind.queue_name,
                sync=self.sync,
                workers=workers,
                has_synced=[pod_informer.has_synced, rs_informer.has_synced],
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
                kind.resource: lambda: rs_informer.last_sync_resource_version,
            }
            consistency = ConsistencyStore(trackers if stale_cache_consistency else {})
        self.consistency = consistency
        pod_control = PodControl(
            client, recorder, on_write=partial(self.consistency.wrote_owned, PODS)
        )
        manager = ReplicaManager(
            expectations=self.expectations,
            pod_control=pod_control,
            related_pods=self._lookup.indirectly_related_pods,
            burst_replicas=burst_replicas,
            observe_age_ratio=self.metrics.observe_deletion_age_ratio,
            kind=kind,
        )
        self._syncer = ReplicaSetSyncer(
            client=client,
            rs_lister=rs_informer.lister(),
            pod_indexer=pod_informer.indexer,
            expectations=self.expectations,
            manager=manager,
            consistency=self.consistency,
            metrics=self.metrics,
            clock=self._clock,
            enqueue=self.controller.enqueue,
            terminating_replicas=terminating_replicas and kind.status_terminating_replicas,
            kind=kind,
        )
        rs_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_replica_set,
                update_func=self.update_replica_set,
                delete_func=self.delete_replica_set,
            )
        )
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_pod, update_func=self.update_pod, delete_func=self.delete_pod
            )
        )

    async def run(self) -> None:
        """Wait for the caches, then sync with the workers until cancelled."""
        await self.controller.run()

    async def sync(self, key: str) -> Result | None:
        """Sync one ReplicaSet; see
        :class:`~kcontrol_controllers.replicaset._sync.ReplicaSetSyncer`."""
        return await self._syncer.sync(key)

    # -- queueing ----------------------------------------------------------------------------

    def _enqueue(self, rs: Mapping[str, Any]) -> None:
        self.controller.enqueue(key_func(rs))

    def _enqueue_after(self, rs: Mapping[str, Any], delay: float) -> None:
        self.controller.enqueue_after(key_func(rs), delay)

    # -- ReplicaSet events -------------------------------------------------------------------

    def add_replica_set(self, rs: Object) -> None:
        _log.debug(f"adding {self.kind.kind}", key=key_func(rs))
        self._enqueue(rs)

    def update_replica_set(self, old: Object, cur: Object) -> None:
        """Queue on every update but the controller's own status write coming back; a new
        UID means the old ReplicaSet was deleted."""
        if _meta(cur).get("uid") != _meta(old).get("uid"):
            self.delete_replica_set(DeletedFinalStateUnknown(key_func(old), old))
        elif self.consistency.is_own_status_write(key_func(cur), self.kind.resource, old, cur):
            return
        old_replicas = (old.get("spec") or {}).get("replicas")
        cur_replicas = (cur.get("spec") or {}).get("replicas")
        if old_replicas != cur_replicas:
            _log.debug(
                f"{self.kind.kind} desired pod count changed",
                key=key_func(cur),
                old=old_replicas,
                new=cur_replicas,
            )
        self._enqueue(cur)

    def delete_replica_set(self, obj: Any) -> None:
        """Forget the ReplicaSet's expectations (a new one of that name starts clean)."""
        rs = deleted_object(obj, self.kind.kind)
        if rs is None:
            return
        key = key_func(rs)
        _log.debug(f"deleting {self.kind.kind}", key=key)
        self.consistency.clear(key, _meta(rs).get("uid"))
        self.expectations.delete_expectations(key)
        self.controller.enqueue(key)

    # -- pod events --------------------------------------------------------------------------

    def add_pod(self, pod: Object) -> None:
        """Observe the creation for the pod's controller, or queue the ReplicaSets that might
        adopt an orphan (no creation is observed for those)."""
        if _meta(pod).get("deletionTimestamp") is not None:
            # Seen for the first time while already terminating (a restart of the
            # controller): never a creation observation.
            self.delete_pod(pod)
            return
        controller_ref = get_controller_of(pod)
        if controller_ref is not None:
            namespace = _meta(pod).get("namespace", "")
            rs = self._lookup.resolve_controller_ref(namespace, controller_ref)
            if rs is None:
                return
            key = key_func(rs)
            _log.debug("pod created", key=key, pod=pod_key(pod))
            self.expectations.creation_observed(key)
            self.controller.enqueue(key)
            return
        for rs in self._lookup.pod_replica_sets(pod):
            self._enqueue(rs)

    def update_pod(self, old: Object, cur: Object) -> None:
        """Queue the pod's controller (old and new, if it changed), or the ReplicaSets that
        might adopt an orphan whose labels or owner changed; a pod that started terminating
        counts as deleted."""
        old_meta, cur_meta = _meta(old), _meta(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return  # a periodic resync: nothing changed
        labels_changed = (cur_meta.get("labels") or {}) != (old_meta.get("labels") or {})
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if cur_meta.get("deletionTimestamp") is not None:
            if (
                old_meta.get("deletionTimestamp") is not None
                and not (labels_changed or ref_changed)
                and is_pod_terminal(old) == is_pod_terminal(cur)
            ):
                return  # counted as terminating already, and still is
            # Graceful deletion first sets deletionTimestamp: act on it now, not when the
            # kubelet finally removes the pod.
            self.delete_pod(cur)
            if labels_changed:
                self.delete_pod(old)  # deletionTimestamp cannot be unset: old had none
            return

        if ref_changed and old_ref is not None:
            old_rs = self._lookup.resolve_controller_ref(old_meta.get("namespace", ""), old_ref)
            if old_rs is not None:
                self._enqueue(old_rs)

        if cur_ref is not None:
            rs = self._lookup.resolve_controller_ref(cur_meta.get("namespace", ""), cur_ref)
            if rs is None:
                return
            if not (ref_changed or labels_changed or replica_state_changed(old, cur)):
                return  # bound to a node, given an IP...: nothing a sync counts changed
            self._enqueue(rs)
            min_ready_seconds = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(cur) and min_ready_seconds > 0:
                # No event will say when the pod becomes available: look again by then.
                _log.debug("pod will be checked for availability later", pod=pod_key(cur))
                self._enqueue_after(rs, float(min_ready_seconds))
            return

        if labels_changed or ref_changed:
            for rs in self._lookup.pod_replica_sets(cur):
                self._enqueue(rs)

    def delete_pod(self, obj: Any) -> None:
        """Observe the deletion for the pod's controller and queue it; orphans are ignored."""
        pod = deleted_object(obj, "Pod")
        if pod is None:
            return
        controller_ref = get_controller_of(pod)
        if controller_ref is None:
            return
        rs = self._lookup.resolve_controller_ref(_meta(pod).get("namespace", ""), controller_ref)
        if rs is None:
            return
        key = key_func(rs)
        _log.debug("pod deleted", key=key, pod=pod_key(pod))
        self.expectations.deletion_observed(key, pod_key(pod))
        self.controller.enqueue(key)
