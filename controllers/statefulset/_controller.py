"""The StatefulSet controller: informers, event handlers and the controller runner.

A port of the wiring and handlers of kube-controller-manager's ``stateful_set.go``. The
handlers only decide which StatefulSet keys to queue; the work is done by
:class:`~kcontrol_controllers.statefulset._sync.StatefulSetSyncer`.

What queues a StatefulSet ``namespace/name``:

- the set is added, updated (every update, resyncs included) or deleted;
- a pod it controls is added, changes (an update to the same resourceVersion is a resync and
  ignored) or is deleted; a pod whose controller changed queues its old controller too;
- an orphan pod its selector matches is added, or changes labels or owner (to adopt it);
- a pod it controls became ready while ``minReadySeconds > 0``: again after
  ``minReadySeconds`` and one second, when it will have become available.

ControllerRevisions and PersistentVolumeClaims are read from their informers' caches; their
events queue nothing, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import (
    CONTROLLERREVISIONS,
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    Client,
    Object,
)
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import (
    ConsistencyStore,
    Controller,
    ControllerOptions,
    Result,
    get_controller_of,
    key_func,
    resolve_controller_ref,
)
from kcontrol.errors import SelectorError
from kcontrol.events import EventRecorder
from kcontrol.informers import ResourceEventHandlerFuncs, SharedInformerFactory, deleted_object
from kcontrol.labels import selector_from_label_selector
from kcontrol.logging import get_logger

from .. import history
from ..podutil import POD_CONTROLLER_INDEX, ensure_index, is_pod_ready, pod_controller_index_func
from ._control import StatefulSetControl
from ._fields import labels, meta, namespace, spec
from ._history import StatefulSetHistory
from ._identity import overlapping_sets_order
from ._metrics import metrics_for
from ._names import KIND, NAME, QUEUE_NAME
from ._podcontrol import StatefulPodControl
from ._podstate import get_min_ready_seconds
from ._semantic import RevisionEqualityCache
from ._status_updater import StatusUpdater
from ._sync import StatefulSetSyncer

__all__ = ["NAME", "QUEUE_NAME", "StatefulSetController"]

_log = get_logger(__name__)


class StatefulSetController:
    """Keeps every StatefulSet's pods, claims, revisions and status converged.

    Built from shared ``informers`` (StatefulSets, pods, ControllerRevisions and
    PersistentVolumeClaims, all namespaces; the pod controller index and the
    ControllerRevision controller index are added), a ``client`` to write, and a
    ``recorder`` whose source is ``statefulset-controller``. ``workers`` keys are synced at
    once; failures are retried with the default controller rate limiter, forever.

    Features as in Kubernetes 1.36: ``max_unavailable`` (MaxUnavailableStatefulSet, beta,
    off); ``semantic_revisions`` (StatefulSetSemanticRevisionComparison, beta, on);
    ``stale_cache_consistency`` (StaleControllerConsistencyStatefulSet, beta, on) holds a
    sync back until the informers saw the controller's own writes; ``consistency`` replaces
    the store that check uses.

    :meth:`run` blocks until cancelled. Handlers and :meth:`sync` are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        workers: int = 5,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        max_unavailable: bool = False,
        semantic_revisions: bool = True,
        stale_cache_consistency: bool = True,
        consistency: ConsistencyStore | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self.max_unavailable = max_unavailable
        set_informer = informers.for_resource(STATEFULSETS)
        pod_informer = informers.for_resource(PODS)
        revision_informer = informers.for_resource(CONTROLLERREVISIONS)
        claim_informer = informers.for_resource(PERSISTENTVOLUMECLAIMS)
        ensure_index(pod_informer, POD_CONTROLLER_INDEX, pod_controller_index_func)
        ensure_index(
            revision_informer,
            history.CONTROLLER_REVISION_CONTROLLER_INDEX,
            history.controller_revision_index_func,
        )
        self._set_lister = set_informer.lister()
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                has_synced=[
                    pod_informer.has_synced,
                    set_informer.has_synced,
                    claim_informer.has_synced,
                    revision_informer.has_synced,
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
                STATEFULSETS: lambda: set_informer.last_sync_resource_version,
                CONTROLLERREVISIONS: lambda: revision_informer.last_sync_resource_version,
                PERSISTENTVOLUMECLAIMS: lambda: claim_informer.last_sync_resource_version,
            }
            consistency = ConsistencyStore(trackers if stale_cache_consistency else {})
        self.consistency = consistency
        set_history = StatefulSetHistory(
            history.History(
                client,
                revision_informer.lister(),
                indexer=revision_informer.indexer,
                clock=self._clock,
            ),
            semantic=semantic_revisions,
            cache=RevisionEqualityCache(),
        )
        control = StatefulSetControl(
            pod_control=StatefulPodControl(
                client,
                pod_informer.lister(),
                claim_informer.lister(),
                recorder,
                clock=self._clock,
            ),
            history=set_history,
            status_updater=StatusUpdater(client, self._set_lister, clock=self._clock),
            metrics=self.metrics,
            max_unavailable=max_unavailable,
        )
        self._syncer = StatefulSetSyncer(
            client=client,
            set_lister=self._set_lister,
            pod_indexer=pod_informer.indexer,
            history=set_history,
            control=control,
            consistency=self.consistency,
            metrics=self.metrics,
            clock=self._clock,
        )
        set_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_stateful_set,
                update_func=self.update_stateful_set,
                delete_func=self.delete_stateful_set,
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
        """Sync one StatefulSet; see
        :class:`~kcontrol_controllers.statefulset._sync.StatefulSetSyncer`."""
        return await self._syncer.sync(key)

    # -- lookups ---------------------------------------------------------------------------

    def _resolve(self, namespace_: str, controller_ref: Mapping[str, Any]) -> Object | None:
        return resolve_controller_ref(self._set_lister, namespace_, controller_ref, KIND)

    def sets_for_pod(self, pod: Mapping[str, Any]) -> list[Object]:
        """The sets of the pod's namespace whose selector matches its labels (oldest first);
        more than one is a user error, logged."""
        pod_labels = labels(pod)
        if not pod_labels:
            return []
        matches: list[Object] = []
        for set_ in self._set_lister.list(namespace(pod)):
            try:
                selector = selector_from_label_selector(spec(set_).get("selector"))
            except SelectorError:
                continue
            if not selector.empty() and selector.matches(pod_labels):
                matches.append(set_)
        if len(matches) > 1:
            _log.error(
                "user error: more than one StatefulSet is selecting pods", labels=dict(pod_labels)
            )
        return sorted(matches, key=overlapping_sets_order)

    # -- StatefulSet events ------------------------------------------------------------------

    def add_stateful_set(self, set_: Object) -> None:
        self.controller.enqueue(key_func(set_))

    def update_stateful_set(self, old: Object, cur: Object) -> None:
        old_replicas = (old.get("status") or {}).get("replicas")
        cur_replicas = (cur.get("status") or {}).get("replicas")
        if old_replicas != cur_replicas:
            _log.debug(
                "observed updated replica count for StatefulSet",
                key=key_func(cur),
                old=old_replicas,
                new=cur_replicas,
            )
        self.controller.enqueue(key_func(cur))

    def delete_stateful_set(self, obj: Any) -> None:
        set_ = deleted_object(obj, KIND)
        if set_ is None:
            return
        key = key_func(set_)
        self.consistency.clear(key, meta(set_).get("uid"))
        self.controller.enqueue(key)

    # -- pod events --------------------------------------------------------------------------

    def add_pod(self, pod: Object) -> None:
        """Queue the pod's controller, or every set that might adopt an orphan."""
        if meta(pod).get("deletionTimestamp") is not None:
            # Seen for the first time while terminating (a restart): a deletion.
            self.delete_pod(pod)
            return
        controller_ref = get_controller_of(pod)
        if controller_ref is not None:
            set_ = self._resolve(namespace(pod), controller_ref)
            if set_ is not None:
                self.controller.enqueue(key_func(set_))
            return
        for set_ in self.sets_for_pod(pod):
            self.controller.enqueue(key_func(set_))

    def update_pod(self, old: Object, cur: Object) -> None:
        """Queue the pod's controller (and its old one, if it changed), again after
        ``minReadySeconds`` + 1 s when the pod just became ready; or the sets that might adopt an
        orphan whose labels or owner changed."""
        if meta(cur).get("resourceVersion") == meta(old).get("resourceVersion"):
            return  # a periodic resync
        labels_changed = labels(cur) != labels(old)
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_set = self._resolve(namespace(old), old_ref)
            if old_set is not None:
                self.controller.enqueue(key_func(old_set))
        if cur_ref is not None:
            set_ = self._resolve(namespace(cur), cur_ref)
            if set_ is None:
                return
            key = key_func(set_)
            self.controller.enqueue(key)
            min_ready = get_min_ready_seconds(set_)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # A second more, as upstream, so that the pod is surely available by then.
                self.controller.enqueue_after(key, float(min_ready) + 1.0)
            return
        if labels_changed or ref_changed:
            for set_ in self.sets_for_pod(cur):
                self.controller.enqueue(key_func(set_))

    def delete_pod(self, obj: Any) -> None:
        """Queue the deleted pod's controller; orphans are ignored."""
        pod = deleted_object(obj, "Pod")
        if pod is None:
            return
        controller_ref = get_controller_of(pod)
        if controller_ref is None:
            return
        set_ = self._resolve(namespace(pod), controller_ref)
        if set_ is not None:
            self.controller.enqueue(key_func(set_))
