"""One collection of the pod garbage collector: upstream's ``gc`` and its four passes, the
pure selections they make over the cached pods and nodes, and the one write they share.

A collection reads every cached pod and node once and runs, in upstream's order:

1. **terminated** (only with a threshold above 0): pods whose phase is neither ``Pending``,
   ``Running`` nor ``Unknown`` (``Succeeded``, ``Failed`` - and an empty phase, as
   upstream's ``isPodTerminated``); when there are more than the threshold, the surplus is
   deleted, evicted pods first, then the oldest by ``creationTimestamp``, then by name;
2. **terminating on out-of-service nodes**: pods being deleted whose node is in the cache,
   not ``Ready`` and tainted ``node.kubernetes.io/out-of-service``;
3. **orphaned**: pods bound to a node missing from the node cache put that node in
   quarantine for ``quarantine_time``; a quarantined node still missing from the cache once
   its time is up is read from the API server, and if that answers NotFound every pod bound
   to it is deleted with a ``DisruptionTarget`` condition (``DeletionByPodGC``). A node
   that came back in the meantime, or that the GET finds, saves its pods; a GET that fails
   leaves the decision to a later collection (the node is quarantined again while pods
   still name it);
4. **unscheduled terminating**: pods being deleted that were never bound to a node.

Every pod a pass picks goes through :func:`mark_failed_and_delete`: a pod not yet
``Succeeded``/``Failed`` first gets its status patched to ``Failed`` (a strategic merge
patch of ``pods/status`` with the pod's UID as precondition, as upstream's
``PatchPodStatus``), then it is deleted with a grace period of 0. The pods are those of the
collection's one read: a pod the first pass deleted may be picked again by a later one, whose
delete then fails NotFound, as upstream.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from kcontrol.client import NODES, PODS, Client, Object, PatchType
from kcontrol.clock import Clock
from kcontrol.errors import NotFound
from kcontrol.informers import Lister
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time, parse_time
from kcontrol.workqueue import DelayingQueue

from ..conditions import get_condition
from ..scheduling import TAINT_NODE_OUT_OF_SERVICE
from ._metrics import (
    REASON_ORPHANED,
    REASON_TERMINATED,
    REASON_TERMINATING_OUT_OF_SERVICE,
    REASON_TERMINATING_UNSCHEDULED,
    PodGCMetrics,
)

__all__ = [
    "DISRUPTION_TARGET",
    "ORPHANED_CONDITION",
    "GarbageCollector",
    "eviction_and_creation_order",
    "failed_status_patch",
    "has_out_of_service_taint",
    "is_node_ready",
    "is_pod_evicted",
    "is_pod_terminated",
    "is_pod_terminating",
    "mark_failed_and_delete",
    "nodes_to_quarantine",
    "orphaned_pods",
    "terminated_pods_to_delete",
    "terminating_pods_on_out_of_service_nodes",
    "unscheduled_terminating_pods",
    "update_pod_condition",
]

_log = get_logger(__name__)

DISRUPTION_TARGET: Final = "DisruptionTarget"
"""The pod condition type that says why a pod is being disrupted (``v1.DisruptionTarget``)."""

ORPHANED_CONDITION: Final[Mapping[str, str]] = {
    "type": DISRUPTION_TARGET,
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}
"""The condition an orphaned pod is marked ``Failed`` with (``lastTransitionTime`` added when
it is written)."""

_NOT_TERMINATED: Final = frozenset({"Pending", "Running", "Unknown"})
_TERMINAL: Final = frozenset({"Succeeded", "Failed"})
_ZERO_TIME: Final = datetime.min.replace(tzinfo=UTC)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def _node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _ref(pod: Mapping[str, Any]) -> str:
    meta = _meta(pod)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# -- pure selections ------------------------------------------------------------------------


def is_pod_terminated(pod: Mapping[str, Any]) -> bool:
    """Upstream's ``isPodTerminated``: the phase is none of ``Pending``, ``Running``,
    ``Unknown`` - so ``Succeeded``, ``Failed``, and a pod with no phase at all."""
    return _status(pod).get("phase") not in _NOT_TERMINATED


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    """The pod is being deleted (``metadata.deletionTimestamp`` is set)."""
    return _meta(pod).get("deletionTimestamp") is not None


def is_pod_evicted(pod: Mapping[str, Any]) -> bool:
    """The kubelet's ``eviction.PodIsEvicted``: ``Failed`` with reason ``Evicted``."""
    status = _status(pod)
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def eviction_and_creation_order(pod: Mapping[str, Any]) -> tuple[bool, datetime, str]:
    """The sort key of upstream's ``byEvictionAndCreationTimestamp``: evicted pods first,
    then by ``creationTimestamp`` (a missing one counts as the zero time, the oldest), then by
    name."""
    created = parse_time(_meta(pod).get("creationTimestamp"))
    return (
        not is_pod_evicted(pod),
        created if created is not None else _ZERO_TIME,
        str(_meta(pod).get("name") or ""),
    )


def terminated_pods_to_delete(pods: Iterable[Object], threshold: int) -> list[Object]:
    """The terminated pods beyond ``threshold``, in the order they go (evicted, then the
    oldest); none when ``threshold`` is 0 or less (the pass is off) or not exceeded."""
    if threshold <= 0:
        return []
    terminated = [pod for pod in pods if is_pod_terminated(pod)]
    surplus = len(terminated) - threshold
    if surplus <= 0:
        return []
    return sorted(terminated, key=eviction_and_creation_order)[:surplus]


def is_node_ready(node: Mapping[str, Any]) -> bool:
    """``nodeutil.IsNodeReady``: the node's ``Ready`` condition is ``True``."""
    ready = get_condition(_status(node), "Ready")
    return ready is not None and ready.get("status") == "True"


def has_out_of_service_taint(node: Mapping[str, Any]) -> bool:
    """The node carries the ``node.kubernetes.io/out-of-service`` taint (any value, any
    effect)."""
    taints = (node.get("spec") or {}).get("taints") or ()
    return any(taint.get("key") == TAINT_NODE_OUT_OF_SERVICE for taint in taints)


def terminating_pods_on_out_of_service_nodes(
    pods: Iterable[Object], node_of: Callable[[str], Object | None]
) -> list[Object]:
    """The terminating pods whose node (``node_of(name)``, ``None`` when not cached) is not
    ready and tainted out-of-service, sorted as :func:`eviction_and_creation_order`."""
    picked = []
    for pod in pods:
        if not is_pod_terminating(pod):
            continue
        node = node_of(_node_name(pod))
        if node is None:
            continue
        if not is_node_ready(node) and has_out_of_service_taint(node):
            picked.append(pod)
    return sorted(picked, key=eviction_and_creation_order)


def nodes_to_quarantine(pods: Iterable[Object], existing: set[str]) -> set[str]:
    """The nodes pods are bound to that the node cache does not have."""
    return {name for pod in pods if (name := _node_name(pod)) and name not in existing}


def orphaned_pods(pods: Iterable[Object], deleted_nodes: set[str]) -> list[Object]:
    """The pods bound to one of ``deleted_nodes``."""
    return [pod for pod in pods if _node_name(pod) in deleted_nodes]


def unscheduled_terminating_pods(pods: Iterable[Object]) -> list[Object]:
    """The terminating pods never bound to a node, whatever their phase."""
    return [pod for pod in pods if is_pod_terminating(pod) and not _node_name(pod)]


def update_pod_condition(
    status: dict[str, Any], condition: Mapping[str, Any], now: datetime
) -> bool:
    """Upstream's ``UpdatePodCondition`` on ``status`` in place: ``condition`` with
    ``lastTransitionTime`` ``now`` is appended, or replaces the condition of its type (keeping
    that one's ``lastTransitionTime`` when the status did not change). True when something
    changed."""
    new = dict(condition)
    new["lastTransitionTime"] = format_time(now)
    conditions: list[dict[str, Any]] = list(status.get("conditions") or ())
    for index, old in enumerate(conditions):
        if old.get("type") != new["type"]:
            continue
        if new.get("status") == old.get("status"):
            new["lastTransitionTime"] = old.get("lastTransitionTime")
        fields = ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
        unchanged = all(new.get(name) == old.get(name) for name in fields)
        conditions[index] = new
        status["conditions"] = conditions
        return not unchanged
    status["conditions"] = [*conditions, new]
    return True


def failed_status_patch(
    pod: Mapping[str, Any], now: datetime, condition: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The strategic merge patch of ``pods/status`` that marks ``pod`` ``Failed`` (with
    ``condition`` put in as :func:`update_pod_condition` does), its UID as precondition -
    what upstream's ``PatchPodStatus`` sends; ``None`` when the pod is already ``Succeeded``
    or ``Failed``, which is left as it is."""
    old = _status(pod)
    if old.get("phase") in _TERMINAL:
        return None
    new = copy.deepcopy(dict(old))
    status: dict[str, Any] = {"phase": "Failed"}
    if condition is not None and update_pod_condition(new, condition, now):
        changed = [c for c in new["conditions"] if c not in (old.get("conditions") or ())]
        status["$setElementOrder/conditions"] = [{"type": c["type"]} for c in new["conditions"]]
        status["conditions"] = changed
    return {"metadata": {"uid": _meta(pod).get("uid")}, "status": status}


# -- the write ------------------------------------------------------------------------------


async def mark_failed_and_delete(
    client: Client, pod: Object, now: datetime, condition: Mapping[str, Any] | None = None
) -> None:
    """Upstream's ``markFailedAndDeletePodWithCondition``: patch the pod ``Failed`` unless it
    is terminal already (:func:`failed_status_patch` - a pod whose kubelet is gone would
    otherwise stay ``Running`` for ever), then delete it with a grace period of 0. API errors
    propagate."""
    meta = _meta(pod)
    name, namespace = str(meta.get("name")), str(meta.get("namespace") or "")
    _log.info("PodGC is force deleting Pod", pod=_ref(pod))
    patch = failed_status_patch(pod, now, condition)
    if patch is not None:
        await client.patch(
            PODS,
            name,
            patch,
            namespace=namespace,
            patch_type=PatchType.STRATEGIC,
            subresource="status",
        )
    await client.delete(PODS, name, namespace=namespace, grace_period_seconds=0)


# -- the collection -------------------------------------------------------------------------


class GarbageCollector:
    """The four passes over the cached ``pods`` and ``nodes`` (module docstring).

    ``quarantine`` is the delaying queue of missing nodes, kept from one collection to the
    next; ``quarantine_time`` their wait; ``clock`` gives the wall time of the conditions
    written. :meth:`gc` is one collection; the passes are public for tests.
    """

    def __init__(
        self,
        *,
        client: Client,
        pods: Lister,
        nodes: Lister,
        quarantine: DelayingQueue[str],
        terminated_pod_threshold: int,
        quarantine_time: float,
        clock: Clock,
        metrics: PodGCMetrics,
    ) -> None:
        self._client = client
        self._pods = pods
        self._nodes = nodes
        self._quarantine = quarantine
        self._threshold = terminated_pod_threshold
        self._quarantine_time = quarantine_time
        self._clock = clock
        self._metrics = metrics

    async def gc(self) -> None:
        """One collection: the passes in upstream's order over one read of the caches."""
        pods = self._pods.list()
        nodes = self._nodes.list()
        if self._threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: Sequence[Object]) -> None:
        doomed = terminated_pods_to_delete(pods, self._threshold)
        if doomed:
            _log.info("Garbage collecting pods", num_pods=len(doomed))
            await self._delete_all(doomed, REASON_TERMINATED)

    async def gc_terminating(self, pods: Sequence[Object]) -> None:
        _log.debug("GC'ing terminating pods that are on out-of-service nodes")
        doomed = terminating_pods_on_out_of_service_nodes(pods, self._cached_node)
        if doomed:
            _log.debug(
                "Garbage collecting pods that are terminating on node tainted with "
                "node.kubernetes.io/out-of-service",
                num_pods=len(doomed),
            )
            await self._delete_all(doomed, REASON_TERMINATING_OUT_OF_SERVICE)

    async def gc_orphaned(self, pods: Sequence[Object], nodes: Sequence[Object]) -> None:
        _log.debug("GC'ing orphaned")
        existing = {str(_meta(node).get("name")) for node in nodes}
        for name in nodes_to_quarantine(pods, existing):
            self._quarantine.add_after(name, self._quarantine_time)
        deleted = await self._discover_deleted_nodes(existing)
        doomed = orphaned_pods(pods, deleted)
        for pod in doomed:
            _log.info("Found orphaned Pod assigned to the Node, deleting", pod=_ref(pod))
        await self._delete_all(doomed, REASON_ORPHANED, ORPHANED_CONDITION)

    async def gc_unscheduled_terminating(self, pods: Sequence[Object]) -> None:
        _log.debug("GC'ing unscheduled pods which are terminating")
        doomed = unscheduled_terminating_pods(pods)
        for pod in doomed:
            _log.info(
                "Found unscheduled terminating Pod not assigned to any Node, deleting",
                pod=_ref(pod),
            )
        await self._delete_all(doomed, REASON_TERMINATING_UNSCHEDULED)

    # -- helpers ----------------------------------------------------------------------------

    def _cached_node(self, name: str) -> Object | None:
        if not name:
            return None
        try:
            return self._nodes.get(name)
        except NotFound:
            _log.error("Failed to get node", node=name)
            return None

    async def _discover_deleted_nodes(self, existing: set[str]) -> set[str]:
        """The quarantined nodes whose time is up and that are really gone: missing from the
        cache and answered NotFound by a GET (upstream's ``discoverDeletedNodes``)."""
        deleted: set[str] = set()
        queue = self._quarantine
        while len(queue) > 0:
            name = await queue.get()
            try:
                if name not in existing and not await self._node_exists(name):
                    deleted.add(name)
            finally:
                queue.done(name)
        return deleted

    async def _node_exists(self, name: str) -> bool:
        try:
            await self._client.get(NODES, name)
        except NotFound:
            return False
        except Exception as error:  # quarantined again next time while pods name it
            _log.error("Error while getting node", node=name, error=str(error))
            return True
        return True

    async def _delete_all(
        self, pods: Sequence[Object], reason: str, condition: Mapping[str, Any] | None = None
    ) -> None:
        """Mark failed and delete each of ``pods`` concurrently, counting every attempt and
        every failure under ``reason``; one pod's failure is logged and stops no other."""
        if not pods:
            return
        async with asyncio.TaskGroup() as group:
            for pod in pods:
                group.create_task(self._delete_one(pod, reason, condition))

    async def _delete_one(
        self, pod: Object, reason: str, condition: Mapping[str, Any] | None
    ) -> None:
        namespace = str(_meta(pod).get("namespace") or "")
        self._metrics.deleting(namespace, reason)
        try:
            await mark_failed_and_delete(self._client, pod, self._clock.wall(), condition)
        except Exception as error:  # counted and logged; the next collection tries again
            self._metrics.failed(namespace, reason)
            _log.error("failed to delete pod", pod=_ref(pod), reason=reason, error=str(error))
        else:
            _log.info("Forced deletion of Pod succeeded", pod=_ref(pod), reason=reason)
