"""The DaemonSet sync: read the caches, record the revision, place the pods, roll them,
write the status (upstream ``syncDaemonSet`` and ``updateDaemonSet``, Kubernetes 1.36).

Level-based, first match wins::

    cache behind own writes?   -> requeue through the rate limiter (not an error)
    DaemonSet gone?            -> forget its expectations, done
    selector empty?            -> Warning SelectingAll, done
    being deleted?             -> done (its pods and revisions may already be going)
    claim pods, construct the history (current revision and its hash)
    expectations unsatisfied?  -> write the counts only (observedGeneration kept), done
    manage                     (create and delete pods per node, see _manage)
    nothing in flight and RollingUpdate?
                               -> one rolling-update step (see _update); OnDelete: none
    clean up old revisions     (past revisionHistoryLimit)
    write the status           (with observedGeneration)
    a failure above?           -> raise it (retried with backoff)
    ready pods not yet available?
                               -> sync again after minReadySeconds
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kcontrol.client import DAEMONSETS, PODS, Client, Object
from kcontrol.clock import Clock
from kcontrol.controller import (
    ConsistencyStore,
    ControllerExpectations,
    ControllerRefManager,
    Result,
    SupersededWrites,
    key_func,
    recheck_owner,
)
from kcontrol.errors import NotFound, StaleCache
from kcontrol.events import EVENT_TYPE_WARNING, EventRecorder
from kcontrol.informers import Indexer, Lister, split_meta_namespace_key
from kcontrol.labels import Selector, selector_from_label_selector
from kcontrol.logging import get_logger

from ..podutil import filter_pods_by_owner, is_controlled_by, is_pod_terminal
from ._history import DAEMON_SET_API_VERSION, DAEMON_SET_KIND, DaemonSetHistory
from ._manage import DaemonPodsManager
from ._metrics import DaemonSetMetrics
from ._names import SELECTING_ALL_REASON
from ._pods import get_target_node_name
from ._rolling import ROLLING_UPDATE
from ._status import DaemonSetCounts, calculate_counts, status_in_sync, store_daemon_set_status
from ._update import plan_rolling_update

__all__ = ["DaemonSetSyncer", "group_by_node"]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def group_by_node(
    pods: Sequence[Object], *, include_deleted_terminal: bool = False
) -> dict[str, list[Object]]:
    """The pods by the node they are for (upstream ``getNodesToDaemonPods``): pods naming no
    node are skipped, and so - unless ``include_deleted_terminal`` - are terminal pods being
    deleted (a finalizer or the kubelet holds them; nothing is left to do with them)."""
    by_node: dict[str, list[Object]] = {}
    for pod in pods:
        if (
            not include_deleted_terminal
            and is_pod_terminal(pod)
            and _meta(pod).get("deletionTimestamp") is not None
        ):
            continue
        try:
            node_name = get_target_node_name(pod)
        except ValueError:
            _log.debug("no target node for daemon pod", pod=_meta(pod).get("name"))
            continue
        by_node.setdefault(node_name, []).append(pod)
    return by_node


def _availability_check(ds: Mapping[str, Any], counts: DaemonSetCounts) -> Result | None:
    """Sync again after ``minReadySeconds`` while ready pods are not yet available: no event
    says when they become so (upstream's "last line of defense")."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    if min_ready > 0 and counts.numberReady != counts.numberAvailable:
        return Result(requeue_after=float(min_ready))
    return None


class DaemonSetSyncer:
    """Syncs one DaemonSet key at a time; see the module docstring."""

    def __init__(
        self,
        *,
        client: Client,
        ds_lister: Lister,
        node_lister: Lister,
        pod_indexer: Indexer,
        history: DaemonSetHistory,
        manager: DaemonPodsManager,
        expectations: ControllerExpectations,
        consistency: ConsistencyStore,
        metrics: DaemonSetMetrics,
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self._client = client
        self._ds_lister = ds_lister
        self._node_lister = node_lister
        self._pod_indexer = pod_indexer
        self._history = history
        self._manager = manager
        self._expectations = expectations
        self._consistency = consistency
        self._metrics = metrics
        self._recorder = recorder
        self._clock = clock
        self._status_writes = SupersededWrites()

    async def sync(self, key: str) -> Result | None:
        """Converge the DaemonSet ``key`` (``namespace/name``); raises to be retried
        (:class:`~kcontrol.errors.StaleCache`, not an error, while the caches are behind the
        controller's own writes)."""
        namespace, name = split_meta_namespace_key(key)
        try:
            self._consistency.ensure_ready(key)
        except StaleCache as stale:
            self._metrics.stale_sync_skipped(stale.resource.group, stale.resource.plural)
            raise  # the runner retries it (see Controller)
        try:
            ds = self._ds_lister.get(namespace, name)
        except NotFound:
            _log.debug("DaemonSet has been deleted", key=key)
            self._expectations.delete_expectations(key)
            self._consistency.clear(key)
            self._status_writes.forget(key)
            return None
        with self._consistency.recording(key, str(_meta(ds).get("uid") or "")):
            return await self._sync(key, ds)

    async def _sync(self, key: str, ds: Object) -> Result | None:
        selector_spec = (ds.get("spec") or {}).get("selector")
        if not selector_spec or (
            not selector_spec.get("matchLabels") and not selector_spec.get("matchExpressions")
        ):
            self._recorder.event(
                ds,
                EVENT_TYPE_WARNING,
                SELECTING_ALL_REASON,
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            return None
        if _meta(ds).get("deletionTimestamp") is not None:
            # Its revisions may be gone before its pods: no status can be trusted.
            return None
        selector = selector_from_label_selector(selector_spec)
        nodes = self._node_lister.list()
        pods = await self._claim_pods(ds, selector)
        revisions = await self._history.construct_history(ds, selector, pods)
        hash_ = revisions.hash

        if not self._expectations.satisfied_expectations(key):
            # Not observed this generation's work: do not claim to have seen it.
            counts = await self._write_status(ds, nodes, pods, hash_, update_observed_gen=False)
            return _availability_check(ds, counts)

        failure: Exception | None = None
        try:
            await self._update_daemon_set(
                key=key, ds=ds, nodes=nodes, pods=pods, hash_=hash_, old_revisions=revisions.old
            )
        except Exception as error:
            failure = error
        try:
            counts = await self._write_status(ds, nodes, pods, hash_, update_observed_gen=True)
        except Exception as status_error:
            if failure is None:
                raise
            _log.error("failed to update DaemonSet status", key=key, error=str(status_error))
        if failure is not None:
            raise failure
        return _availability_check(ds, counts)

    async def _update_daemon_set(
        self,
        *,
        key: str,
        ds: Object,
        nodes: Sequence[Object],
        pods: Sequence[Object],
        hash_: str,
        old_revisions: Sequence[Object],
    ) -> None:
        node_to_pods = group_by_node(pods)
        needing, to_delete = self._manager.plan(ds, nodes, node_to_pods, hash_)
        await self._manager.sync_nodes(ds, to_delete, needing, hash_)

        if self._expectations.satisfied_expectations(key):
            strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
            if strategy == ROLLING_UPDATE:
                plan = plan_rolling_update(
                    ds,
                    {str(_meta(n).get("name")): n for n in nodes},
                    {node: list(node_pods) for node, node_pods in node_to_pods.items()},
                    hash_,
                    self._clock.wall(),
                )
                await self._manager.sync_nodes(
                    ds, plan.pods_to_delete, plan.nodes_needing_pods, hash_
                )
        await self._history.cleanup_history(ds, old_revisions, pods)

    async def _claim_pods(self, ds: Object, selector: Selector) -> list[Object]:
        """The pods ``ds`` owns after adopting matching orphans and releasing its pods that
        stopped matching (upstream ``getDaemonPods``)."""
        candidates = filter_pods_by_owner(
            self._pod_indexer, ds, DAEMON_SET_KIND, include_orphans=True
        )
        manager = ControllerRefManager(
            self._client,
            ds,
            selector,
            (DAEMON_SET_API_VERSION, DAEMON_SET_KIND),
            PODS,
            can_adopt=recheck_owner(self._client, DAEMONSETS, ds),
        )
        return await manager.claim(candidates)

    def _current_pods(self, ds: Object, claimed: Sequence[Object]) -> list[Object]:
        """The cached pods ``ds`` controls, and those of ``claimed`` the cache still shows
        without a controller (adopted by this sync)."""
        adopted = {_meta(p).get("uid") for p in claimed}
        return [
            pod
            for pod in filter_pods_by_owner(
                self._pod_indexer, ds, DAEMON_SET_KIND, include_orphans=True
            )
            if is_controlled_by(pod, ds) or _meta(pod).get("uid") in adopted
        ]

    async def _write_status(
        self,
        ds: Object,
        nodes: Sequence[Object],
        claimed: Sequence[Object],
        hash_: str,
        *,
        update_observed_gen: bool,
    ) -> DaemonSetCounts:
        """Count and store the status from the daemon pods as the cache has them now, as
        upstream's ``updateDaemonSetStatus`` reads them again: pods the sync created or
        deleted, whose events arrived while it awaited its writes, count in this write
        rather than in one of their own at the next sync. ``claimed`` (the sync's claim)
        adds the orphans it adopted, which the cache may not show owned yet; no second claim
        writes them again. A status the sync that follows at once supersedes is left out
        (:class:`~kcontrol.controller.SupersededWrites`: never two in a row; upstream writes
        each one)."""
        counts = calculate_counts(
            ds, nodes, group_by_node(self._current_pods(ds, claimed)), hash_, self._clock.wall()
        )
        if not status_in_sync(ds, counts) and self._status_writes.leave_out(key_func(ds)):
            return counts
        await store_daemon_set_status(
            self._client, ds, counts, update_observed_gen=update_observed_gen
        )
        return counts
