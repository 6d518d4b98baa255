"""Placing daemon pods: which nodes need one, which pods go, and sending those creations and
deletions (upstream ``podsShouldBeOnNode``, ``manage`` and ``syncNodes``, Kubernetes 1.36).

Per node, from its :class:`~kcontrol_controllers.daemonset._placement.Placement` and its
daemon pods (first match wins):

====================================  ===================================================
should run, no daemon pod             create one
should continue running               delete failed pods (rate-limited per node by the
                                      failed-pods backoff, with a ``FailedDaemonPod``
                                      event) and succeeded ones (``SucceededDaemonPod``);
                                      without surge keep only the first running pod; with
                                      surge keep the oldest new and the oldest old pod,
                                      and the old one only while it is ready and the new
                                      one not yet available; no running pod left while
                                      surging: create one
should not continue, has pods         delete them all
====================================  ===================================================

Pods being deleted are left alone, and pods pinned to a node that no longer exists and
never bound are deleted (the pod garbage collector only removes bound pods).

:meth:`DaemonPodsManager.sync_nodes` raises the expectations first (at most ``burst``
creations and ``burst`` deletions), then creates in slow-start batches (1, 2, 4, ...,
stopping after a batch with a failure: the pods never attempted are no longer expected) each
pod pinned to its node by node affinity, and deletes in parallel; a failed request lowers the
expectations (NotFound on delete is no failure). Events of the requests are the shared
:class:`~kcontrol_controllers.podcontrol.PodControl`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from kcontrol.client import Object, deep_copy
from kcontrol.controller import ControllerExpectations, key_func
from kcontrol.errors import NotFound, is_namespace_terminating
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.logging import get_logger

from ..podcontrol import PodControl
from ..podutil import is_pod_available, is_pod_ready, new_controller_ref
from ._backoff import FailedPodsBackoff
from ._history import DAEMON_SET_API_VERSION, DAEMON_SET_KIND
from ._names import (
    BURST_REPLICAS,
    FAILED_DAEMON_POD_REASON,
    SUCCEEDED_DAEMON_POD_REASON,
    UNIQUE_LABEL_KEY,
)
from ._placement import DaemonPlacement, Placement, node_should_run_daemon_pod
from ._pods import (
    create_pod_template,
    failed_pods_backoff_key,
    get_template_generation,
    get_unscheduled_pods_without_node,
    oldest_first,
    replace_daemon_set_pod_node_name_node_affinity,
)
from ._rolling import allows_surge

__all__ = ["SLOW_START_INITIAL_BATCH_SIZE", "DaemonPodsManager", "NodePlan", "slow_start_batch"]

_log = get_logger(__name__)

SLOW_START_INITIAL_BATCH_SIZE: Final = 1
"""The first creation batch; each batch that fully succeeds doubles the next."""

NodePlan = tuple[list[str], list[str]]
"""``(nodes needing a daemon pod, names of pods to delete)``."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


async def slow_start_batch(
    count: int, call: Callable[[int], Awaitable[None]]
) -> tuple[int, list[Exception]]:
    """Call ``call(i)`` for ``i`` in ``range(count)``, concurrently in batches of 1, 2, 4, ...;
    stop after the first batch with a failure. Returns how many calls were made and their
    failures. ``CancelledError`` propagates."""
    errors: list[Exception] = []
    position = 0
    batch = min(count, SLOW_START_INITIAL_BATCH_SIZE)
    while batch > 0:

        async def one(index: int) -> None:
            try:
                await call(index)
            except Exception as error:
                errors.append(error)

        async with asyncio.TaskGroup() as group:
            for index in range(position, position + batch):
                group.create_task(one(index))
        position += batch
        if errors:
            break
        batch = min(2 * batch, count - position)
    return position, errors


class DaemonPodsManager:
    """Decides and sends a DaemonSet's pod creations and deletions (module docstring).

    ``expectations`` are keyed by the DaemonSet's ``namespace/name``; ``pod_control`` sends
    the requests; ``recorder`` records the failed- and succeeded-pod events; ``backoff`` rate
    limits the deletion of failed pods per node; ``enqueue_after`` puts a DaemonSet key back
    after a delay (when a failed pod waits for its backoff).
    """

    def __init__(
        self,
        *,
        expectations: ControllerExpectations,
        pod_control: PodControl,
        recorder: EventRecorder,
        backoff: FailedPodsBackoff,
        enqueue_after: Callable[[str, float], None],
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        if burst_replicas < 1:
            raise ValueError(f"burst_replicas must be >= 1, got {burst_replicas}")
        self._expectations = expectations
        self._pod_control = pod_control
        self._recorder = recorder
        self._backoff = backoff
        self._enqueue_after = enqueue_after
        self._burst = burst_replicas

    # -- deciding --------------------------------------------------------------------------------

    def pods_should_be_on_node(
        self,
        node: Mapping[str, Any],
        node_to_daemon_pods: Mapping[str, Sequence[Object]],
        ds: Mapping[str, Any],
        hash_: str,
        placement: Placement | None = None,
    ) -> NodePlan:
        """What ``node`` needs (the table of the module docstring); ``placement``: the
        node's, when the caller has it."""
        if placement is None:
            placement = node_should_run_daemon_pod(node, ds)
        node_name = _name(node)
        daemon_pods = node_to_daemon_pods.get(node_name)
        needing: list[str] = []
        to_delete: list[str] = []
        if placement.should_run and not daemon_pods:
            needing.append(node_name)
        elif placement.should_continue_running:
            running = self._prune_finished(ds, node_name, daemon_pods or (), to_delete)
            if not allows_surge(ds):
                for pod in oldest_first(running)[1:]:
                    to_delete.append(_name(pod))
            elif not running:
                if placement.should_run:
                    needing.append(node_name)  # surging needs one live pod per node
            elif len(running) > 1:
                to_delete.extend(self._surge_extras(ds, running, hash_))
        elif daemon_pods:
            to_delete.extend(
                _name(pod) for pod in daemon_pods if _meta(pod).get("deletionTimestamp") is None
            )
        return needing, to_delete

    def _prune_finished(
        self, ds: Mapping[str, Any], node_name: str, pods: Sequence[Object], to_delete: list[str]
    ) -> list[Object]:
        """Add the node's failed (outside their backoff) and succeeded pods to ``to_delete``;
        return its running ones. Pods being deleted are neither."""
        running: list[Object] = []
        for pod in pods:
            if _meta(pod).get("deletionTimestamp") is not None:
                continue
            phase = (pod.get("status") or {}).get("phase")
            where = f"{_meta(pod).get('namespace')}/{_name(pod)} on node {node_name}"
            if phase == "Failed":
                # The kubelet may keep rejecting the pod: do not fight it in a hot loop.
                key = failed_pods_backoff_key(ds, node_name)
                now = self._backoff.clock.now()
                if self._backoff.is_in_backoff_since_update(key, now):
                    delay = self._backoff.get(key)
                    _log.debug("deleting failed pod limited by backoff", pod=where, delay=delay)
                    self._enqueue_after(key_func(ds), delay)
                    continue
                self._backoff.next(key, now)
                self._recorder.eventf(
                    ds,
                    EVENT_TYPE_WARNING,
                    FAILED_DAEMON_POD_REASON,
                    "Found failed daemon pod %s, will try to kill it",
                    where,
                )
                to_delete.append(_name(pod))
            elif phase == "Succeeded":
                self._recorder.eventf(
                    ds,
                    EVENT_TYPE_NORMAL,
                    SUCCEEDED_DAEMON_POD_REASON,
                    "Found succeeded daemon pod %s, will try to delete it",
                    where,
                )
                to_delete.append(_name(pod))
            else:
                running.append(pod)
        return running

    def _surge_extras(
        self, ds: Mapping[str, Any], running: Sequence[Object], hash_: str
    ) -> list[str]:
        """With surge: all but the oldest new and oldest old pod; and the old one too once it
        is not ready or the new one is available."""
        to_delete: list[str] = []
        oldest_new: Object | None = None
        oldest_old: Object | None = None
        for pod in oldest_first(running):
            if (_meta(pod).get("labels") or {}).get(UNIQUE_LABEL_KEY) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            to_delete.append(_name(pod))
        if oldest_new is not None and oldest_old is not None:
            min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(oldest_old) or is_pod_available(
                oldest_new, min_ready, self._backoff.clock.wall()
            ):
                to_delete.append(_name(oldest_old))
        return to_delete

    def plan(
        self,
        ds: Mapping[str, Any],
        nodes: Sequence[Mapping[str, Any]],
        node_to_daemon_pods: Mapping[str, Sequence[Object]],
        hash_: str,
    ) -> NodePlan:
        """Every node's needs, plus the unbound pods pinned to nodes that are gone (upstream
        ``manage`` before ``syncNodes``)."""
        needing: list[str] = []
        to_delete: list[str] = []
        placements = DaemonPlacement(ds)
        for node in nodes:
            node_needing, node_to_delete = self.pods_should_be_on_node(
                node, node_to_daemon_pods, ds, hash_, placements.for_node(node)
            )
            needing.extend(node_needing)
            to_delete.extend(node_to_delete)
        to_delete.extend(get_unscheduled_pods_without_node(nodes, node_to_daemon_pods))
        return needing, to_delete

    # -- sending ---------------------------------------------------------------------------------

    async def sync_nodes(
        self,
        ds: Mapping[str, Any],
        pods_to_delete: Sequence[str],
        nodes_needing_pods: Sequence[str],
        hash_: str,
    ) -> None:
        """Delete ``pods_to_delete`` and create a pod on each of ``nodes_needing_pods`` (at
        most ``burst`` of each), labelled with ``hash_`` (module docstring). Raises the
        failure, or an :class:`ExceptionGroup` of several."""
        key = key_func(ds)
        create_count = min(len(nodes_needing_pods), self._burst)
        delete_count = min(len(pods_to_delete), self._burst)
        self._expectations.set_expectations(key, create_count, delete_count)
        errors: list[Exception] = []

        try:
            generation = get_template_generation(ds)
        except ValueError:
            generation = None  # the hash tells the pods apart
        template = create_pod_template(
            (ds.get("spec") or {}).get("template") or {}, generation, hash_
        )
        namespace = str(_meta(ds).get("namespace") or "")
        controller_ref = new_controller_ref(ds, DAEMON_SET_API_VERSION, DAEMON_SET_KIND)

        async def create(index: int) -> None:
            pod_template: Object = {**template, "spec": dict(template["spec"])}
            affinity = pod_template["spec"].get("affinity")
            pod_template["spec"]["affinity"] = replace_daemon_set_pod_node_name_node_affinity(
                None if affinity is None else deep_copy(affinity), nodes_needing_pods[index]
            )
            try:
                await self._pod_control.create_pod(namespace, pod_template, ds, controller_ref)
            except Exception as error:
                if is_namespace_terminating(error):
                    return  # every creation fails now; nothing worth retrying or reporting
                _log.info("failed creation, lowering expectations", key=key)
                self._expectations.creation_observed(key)
                raise

        if create_count:
            _log.debug("creating daemon pods", key=key, count=create_count)
            attempted, create_errors = await slow_start_batch(create_count, create)
            errors.extend(create_errors)
            skipped = create_count - attempted
            if skipped > 0:
                _log.info("slow-start failure, skipping creations", key=key, skipped=skipped)
                self._expectations.lower_expectations(key, skipped, 0)

        async def delete(name: str) -> None:
            try:
                await self._pod_control.delete_pod(namespace, name, ds)
            except Exception as error:
                self._expectations.deletion_observed(key)
                if not isinstance(error, NotFound):
                    _log.info("failed deletion, lowering expectations", key=key, pod=name)
                    errors.append(error)

        if delete_count:
            _log.debug("deleting daemon pods", key=key, count=delete_count)
            async with asyncio.TaskGroup() as deletions:
                for name in pods_to_delete[:delete_count]:
                    deletions.create_task(delete(name))

        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup(f"syncing the nodes of DaemonSet {key}", errors)
