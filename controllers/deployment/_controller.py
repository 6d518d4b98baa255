"""The Deployment controller: informers, event handlers, and ``syncDeployment``.

Wiring (as kube-controller-manager's): informers on Deployments, ReplicaSets and Pods; a
rate-limited queue named ``deployment``; 5 workers by default
(``--concurrent-deployment-syncs``); a key failing 15 times in a row - 409 Conflicts included -
is dropped until the next event; a sync has no time limit of its own (each API call has the
client's). Events are recorded as ``deployment-controller``.

Handlers only queue keys; :meth:`DeploymentController.sync` reads the current state from the
caches and converges it, in upstream's priority order:

1. the Deployment is gone -> nothing to do;
2. its selector is empty -> Warning ``SelectingAll``, record ``observedGeneration``, stop;
3. claim its ReplicaSets (adopt matching orphans, release those that stopped matching) and
   group its pods by ReplicaSet;
4. it is being deleted -> write the status only;
5. record pausing or resuming in the Progressing condition;
6. paused -> resize and clean up only;
7. a rollback is requested -> roll back;
8. held by an automatic rollback, or its rollout just failed and it opted in -> one step
   towards the last good ReplicaSet (kcontrol's own, :mod:`._autorollback`);
9. ``spec.replicas`` changed (a scaling event) -> resize only;
10. otherwise one step of the Recreate or RollingUpdate strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry

from kcontrol.client import DEPLOYMENTS, PODS, REPLICASETS, Client, Object, deep_copy
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import (
    ConsistencyStore,
    Controller,
    ControllerOptions,
    ControllerRefManager,
    Result,
    get_controller_of,
    key_func,
    recheck_owner,
    resolve_controller_ref,
)
from kcontrol.errors import (
    NAMESPACE_TERMINATING_CAUSE,
    ApiError,
    NotFound,
    StaleCache,
    has_status_cause,
)
from kcontrol.events import EVENT_TYPE_WARNING, EventRecorder
from kcontrol.informers import (
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deleted_object,
    split_meta_namespace_key,
)
from kcontrol.labels import Selector, SelectorError, selector_from_label_selector
from kcontrol.logging import get_logger

from ..podutil import (
    POD_CONTROLLER_INDEX,
    controller_index_func,
    ensure_index,
    filter_by_owner,
    filter_pods_by_owner,
    pod_controller_index_func,
)
from ._annotations import rollback_to
from ._autorollback import metrics_for, plan
from ._fields import (
    CONTROLLER_KIND,
    RECREATE,
    ROLLING_UPDATE,
    deletion_timestamp,
    generation,
    is_controlled_by,
    labels_of,
    name_of,
    namespace_of,
    spec,
    status,
    strategy_type,
    uid_of,
)
from ._hold import roll_back
from ._names import DEFAULT_WORKERS, MAX_RETRIES, NAME, QUEUE_NAME
from ._recreate import rollout_recreate
from ._replicasets import deployments_selecting, find_new_replica_set, find_old_replica_sets
from ._rollback import rollback
from ._rolling import rollout_rolling
from ._sync import (
    check_paused_conditions,
    is_scaling_event,
    sync,
    sync_status_only,
)
from ._writes import SyncContext, update_deployment_status

__all__ = [
    "DEFAULT_WORKERS",
    "MAX_RETRIES",
    "NAME",
    "QUEUE_NAME",
    "DeploymentController",
    "PodMap",
]

_log = get_logger(__name__)

REPLICA_SET_CONTROLLER_INDEX: Final = "replicaSetController"
"""The ReplicaSet informer's index by controller reference (:func:`controller_index_func`)."""

PodMap = dict[str, list[Object]]
"""A Deployment's pods keyed by the UID of the claimed ReplicaSet that controls them."""


class DeploymentController:
    """Syncs Deployments with their ReplicaSets; see the module docstring.

    ``client`` reads live objects (the pre-adoption check) and sends every write;
    ``informers`` provides the Deployment, ReplicaSet and Pod informers (the caller runs
    the factory); ``recorder`` records events as ``deployment-controller``; ``clock`` gives
    the runner its time and conditions their wall time; ``consistency`` records the
    controller's writes (default: a store over the Deployment and ReplicaSet informers; tests
    give one over their own view of the caches); ``auto_rollback`` rolls back failed
    rollouts of Deployments that do not opt out (``--deployment-auto-rollback``; see
    :mod:`._autorollback`). The remaining arguments go to
    :class:`~kcontrol.controller.ControllerOptions`.

    :meth:`run` blocks until cancelled. Tests call the handlers and :meth:`sync` directly.
    """

    def __init__(
        self,
        *,
        client: Client,
        informers: SharedInformerFactory,
        recorder: EventRecorder,
        workers: int = DEFAULT_WORKERS,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        sync_timeout: float | None = None,
        consistency: ConsistencyStore | None = None,
        auto_rollback: bool = False,
    ) -> None:
        self._client = client
        self._auto_rollback = auto_rollback
        self._rollback_metrics = metrics_for(registry)
        self._recorder = recorder
        self._clock: Clock = clock or RealClock()
        d_informer = informers.for_resource(DEPLOYMENTS)
        rs_informer = informers.for_resource(REPLICASETS)
        pod_informer = informers.for_resource(PODS)
        # By controller reference, so that a sync reads its own ReplicaSets and pods (and the
        # orphans it may adopt) rather than every one of its namespace.
        ensure_index(rs_informer, REPLICA_SET_CONTROLLER_INDEX, controller_index_func)
        ensure_index(pod_informer, POD_CONTROLLER_INDEX, pod_controller_index_func)
        self._d_lister = d_informer.lister()
        self._rs_lister = rs_informer.lister()
        self._rs_indexer = rs_informer.indexer
        self._pod_indexer = pod_informer.indexer
        self._ctx = SyncContext(
            client=client,
            recorder=recorder,
            rs_lister=self._rs_lister,
            clock=self._clock,
            consistency=consistency
            if consistency is not None
            else ConsistencyStore(
                {
                    DEPLOYMENTS: lambda: d_informer.last_sync_resource_version,
                    REPLICASETS: lambda: rs_informer.last_sync_resource_version,
                }
            ),
        )
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                has_synced=[d_informer.has_synced, rs_informer.has_synced, pod_informer.has_synced],
                sync_timeout=sync_timeout,
                max_retries=MAX_RETRIES,
                clock=self._clock,
                registry=registry,
            )
        )
        d_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_deployment,
                update_func=self.update_deployment,
                delete_func=self.delete_deployment,
            )
        )
        rs_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_replica_set,
                update_func=self.update_replica_set,
                delete_func=self.delete_replica_set,
            )
        )
        pod_informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=self.delete_pod))

    async def run(self) -> None:
        """Wait for the caches, then sync Deployments until cancelled."""
        await self.controller.run()

    def _enqueue(self, deployment: Mapping[str, Any]) -> None:
        self.controller.enqueue(key_func(deployment))

    # -- Deployment events -------------------------------------------------------------------

    def add_deployment(self, deployment: Object) -> None:
        self._enqueue(deployment)

    def update_deployment(self, old: Object, current: Object) -> None:
        self._enqueue(current)

    def delete_deployment(self, obj: Any) -> None:
        deployment = deleted_object(obj, "Deployment")
        if deployment is not None:
            self._enqueue(deployment)

    # -- ReplicaSet events -------------------------------------------------------------------

    def add_replica_set(self, replica_set: Object) -> None:
        """A new ReplicaSet wakes its controlling Deployment or, if it is an orphan, every
        Deployment that selects it (one of them may adopt it). One already being deleted
        (seen at start-up) counts as deleted."""
        if deletion_timestamp(replica_set) is not None:
            self.delete_replica_set(replica_set)
            return
        ref = get_controller_of(replica_set)
        if ref is not None:
            deployment = self._resolve_controller_ref(namespace_of(replica_set), ref)
            if deployment is not None:
                self._enqueue(deployment)
            return
        for deployment in self._deployments_for_replica_set(replica_set):
            self._enqueue(deployment)

    def update_replica_set(self, old: Object, current: Object) -> None:
        """A changed ReplicaSet wakes its old controller if the controller reference
        changed, and its current one; an orphan wakes the Deployments selecting it when its
        labels or reference changed. Resyncs (same resourceVersion) are ignored."""
        if _resource_version(old) == _resource_version(current):
            return
        current_ref = get_controller_of(current)
        old_ref = get_controller_of(old)
        ref_changed = current_ref != old_ref
        if ref_changed and old_ref is not None:
            deployment = self._resolve_controller_ref(namespace_of(old), old_ref)
            if deployment is not None:
                self._enqueue(deployment)
        if current_ref is not None:
            deployment = self._resolve_controller_ref(namespace_of(current), current_ref)
            if deployment is not None:
                self._enqueue(deployment)
            return
        if ref_changed or labels_of(current) != labels_of(old):
            for deployment in self._deployments_for_replica_set(current):
                self._enqueue(deployment)

    def delete_replica_set(self, obj: Any) -> None:
        """A deleted ReplicaSet wakes its controlling Deployment; orphans wake nobody."""
        replica_set = deleted_object(obj, "ReplicaSet")
        if replica_set is None:
            return
        ref = get_controller_of(replica_set)
        if ref is None:
            return
        deployment = self._resolve_controller_ref(namespace_of(replica_set), ref)
        if deployment is not None:
            self._enqueue(deployment)

    # -- Pod events --------------------------------------------------------------------------

    def delete_pod(self, obj: Any) -> None:
        """A deleted pod wakes its Recreate Deployment once that has no pod left (the new
        ReplicaSet is created only then).

        The Deployment's ReplicaSets are read from the cache (upstream LISTs them from the
        server here): a handler must not block, and the sync it triggers re-reads everything
        anyway. The deleted pod is already gone from the pod cache when this runs."""
        pod = deleted_object(obj, "Pod")
        if pod is None:
            return
        deployment = self._deployment_for_pod(pod)
        if deployment is None or strategy_type(deployment) != RECREATE:
            return
        try:
            selector = _selector(deployment)
        except SelectorError:
            return
        owned = [
            rs
            for rs in self._rs_lister.list(namespace_of(deployment), selector)
            if is_controlled_by(rs, deployment)
        ]
        pod_map = self._pod_map(owned)
        if not any(pod_map.values()):
            self._enqueue(deployment)

    def _deployment_for_pod(self, pod: Mapping[str, Any]) -> Object | None:
        ref = get_controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return None
        try:
            replica_set = self._rs_lister.get(namespace_of(pod), str(ref.get("name")))
        except NotFound:
            return None
        if uid_of(replica_set) != ref.get("uid"):
            return None
        rs_ref = get_controller_of(replica_set)
        if rs_ref is None:
            return None
        return self._resolve_controller_ref(namespace_of(replica_set), rs_ref)

    # -- lookups -----------------------------------------------------------------------------

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Object | None:
        """The cached Deployment a controller reference names (kind and UID must match)."""
        return resolve_controller_ref(self._d_lister, namespace, ref, CONTROLLER_KIND[1])

    def _deployments_for_replica_set(self, replica_set: Mapping[str, Any]) -> list[Object]:
        deployments = deployments_selecting(
            replica_set, self._d_lister.list(namespace_of(replica_set))
        )
        if len(deployments) > 1:
            _log.debug(
                "user error: more than one deployment selects a replica set",
                replicaset=f"{namespace_of(replica_set)}/{name_of(replica_set)}",
            )
        return deployments

    def _pod_map(self, rs_list: list[Object]) -> PodMap:
        """The pods of the ReplicaSets of ``rs_list`` (inactive ones too: Recreate must see
        them) keyed by the UID of the ReplicaSet that controls them.

        By ownership alone, as upstream's ``getPodMapForDeployment`` (``FilterPodsByOwner``):
        a pod relabelled out of the selector but still controlled by an old ReplicaSet still
        runs old code, and Recreate must wait for it."""
        return {
            uid_of(rs): filter_pods_by_owner(
                self._pod_indexer, rs, "ReplicaSet", include_orphans=False
            )
            for rs in rs_list
        }

    # -- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> Result | None:
        """Converge the Deployment named by ``key``; see the module docstring.

        A sync whose informers have not yet seen this controller's own last writes of the
        Deployment and its ReplicaSets (:class:`~kcontrol.controller.ConsistencyStore`) does
        nothing, and one that would base a write on a copy older than its own earlier write
        of that object ends there; neither is retried: the informer's event for that own
        write syncs the Deployment again, on a cache that has caught up, so no write is sent
        only to be refused with 409 Conflict. A write refused because the namespace is
        terminating drops the key (every later write would fail too). Other errors propagate
        to the runner, a 409 Conflict (a write from a cache stale for another writer's change)
        among them: as upstream's ``handleErr``, it counts toward the :data:`MAX_RETRIES`
        after which the key is dropped until its next event.
        """
        namespace, name = split_meta_namespace_key(key)
        try:
            self._ctx.consistency.ensure_ready(key)
        except StaleCache as stale:
            _log.debug("cache is behind the controller's own write", key=key, reason=str(stale))
            return None
        try:
            cached = self._d_lister.get(namespace, name)
        except NotFound:
            _log.debug("deployment has been deleted", key=key)
            self._ctx.consistency.clear(key)
            self._ctx.deferred.forget(key)
            return None
        deployment: Object = deep_copy(cached)  # never change the cache
        try:
            with self._ctx.consistency.recording(key, uid_of(cached)):
                return await self._sync_deployment(deployment)
        except StaleCache as stale:
            # A write would have been based on a copy older than this sync's own write.
            _log.debug("cache is behind the controller's own write", key=key, reason=str(stale))
            return None
        except ApiError as error:
            if has_status_cause(error, NAMESPACE_TERMINATING_CAUSE):
                _log.debug("namespace is terminating; dropping the key", key=key, error=str(error))
                return None
            raise

    async def _sync_deployment(self, deployment: Object) -> Result | None:
        ctx = self._ctx
        if _selects_everything(deployment):
            self._recorder.event(
                deployment,
                EVENT_TYPE_WARNING,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if int(status(deployment).get("observedGeneration") or 0) < generation(deployment):
                deployment.setdefault("status", {})["observedGeneration"] = generation(deployment)
                try:
                    await update_deployment_status(ctx, deployment)
                except ApiError as error:  # upstream ignores it too: the next event retries
                    _log.debug("recording observedGeneration failed", error=str(error))
            return None

        try:
            selector = _selector(deployment)
        except SelectorError as error:
            raise ValueError(
                f"deployment {namespace_of(deployment)}/{name_of(deployment)} has invalid "
                f"label selector: {error}"
            ) from error
        rs_list = await self._claim_replica_sets(deployment, selector)

        if deletion_timestamp(deployment) is not None:
            await sync_status_only(ctx, deployment, rs_list)
            return None

        await check_paused_conditions(ctx, deployment)

        if spec(deployment).get("paused"):
            await sync(ctx, deployment, rs_list)
            return None

        # Rollback is not re-entrant (it changes revisions): finish it before anything else.
        if rollback_to(deployment) is not None:
            await rollback(ctx, deployment, rs_list)
            return None

        # Before the scaling event: a resize during a hold must grow the ReplicaSet rolled
        # back to, not the one that failed.
        _, old = find_old_replica_sets(deployment, rs_list)
        new_rs = find_new_replica_set(deployment, rs_list)
        hold = plan(deployment, new_rs, old, by_default=self._auto_rollback)
        if hold is not None:
            return await roll_back(
                ctx,
                deployment,
                rs_list,
                hold,
                pod_map=lambda: self._pod_map(rs_list),
                metrics=self._rollback_metrics,
            )

        if await is_scaling_event(ctx, deployment, rs_list):
            await sync(ctx, deployment, rs_list)
            return None

        kind = strategy_type(deployment)
        if kind == RECREATE:
            # Only Recreate reads the pods (are old ones still running?): upstream builds the
            # map for every sync, a pure read, so building it here alone changes nothing.
            pod_map = self._pod_map(rs_list)
            return await rollout_recreate(ctx, deployment, rs_list, pod_map)
        if kind == ROLLING_UPDATE:
            return await rollout_rolling(ctx, deployment, rs_list)
        raise ValueError(f"unexpected deployment strategy type: {kind}")

    async def _claim_replica_sets(self, deployment: Object, selector: Selector) -> list[Object]:
        """The ReplicaSets this Deployment owns after adopting matching orphans and releasing
        owned ones that stopped matching. Adoption is preceded by a live GET proving the
        Deployment still exists with the same UID and is not being deleted."""
        manager = ControllerRefManager(
            self._client,
            deployment,
            selector,
            CONTROLLER_KIND,
            REPLICASETS,
            can_adopt=recheck_owner(self._client, DEPLOYMENTS, deployment),
        )
        # Upstream claims from every ReplicaSet of the namespace; all but the Deployment's own
        # and the orphans are skipped by the claim, so those two are all it is given here.
        candidates = filter_by_owner(
            self._rs_indexer,
            REPLICA_SET_CONTROLLER_INDEX,
            deployment,
            CONTROLLER_KIND[1],
            include_orphans=True,
        )
        return await manager.claim(candidates)


def _selector(deployment: Mapping[str, Any]) -> Selector:
    return selector_from_label_selector(spec(deployment).get("selector"))


def _selects_everything(deployment: Mapping[str, Any]) -> bool:
    """Whether the selector is present but empty (a missing one selects nothing)."""
    selector = spec(deployment).get("selector")
    return (
        isinstance(selector, Mapping)
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
