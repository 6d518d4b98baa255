"""Managing a Job's pods: create the missing ones, delete the extra ones. A port of
``manageJob`` and the pod-deletion helpers of ``job_controller.go``.

How many pods should run (``wantActive``):

- suspended: none - every active pod is deleted;
- no ``completions`` (a work queue): ``parallelism`` until the first success, then whatever
  still runs;
- otherwise: ``completions - succeeded``, at most ``parallelism``.

One sync either deletes or creates, never both (deletion first), and acts on at most
:data:`MAX_POD_CREATE_DELETE_PER_SYNC` pods. Creations honour the pod-recreation backoff (the
Job's, or each index's with ``backoffLimitPerIndex``: the sync is then requeued for when it
ends), go out in slow-start batches (1, 2, 4, ... stopping after the first batch with a
failure), and are recorded as expectations first. With ``podReplacementPolicy: Failed`` (or a
pod failure policy) pods that are still terminating hold their place: no replacement yet.

Pods of an Indexed Job get their index (annotation, label, hostname, ``generateName``
``<job>-<index>-``, the ``JOB_COMPLETION_INDEX`` variable); pods without a valid index and
duplicates of an index are deleted first. Every pod is created with the tracking finalizer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import Object, deep_copy
from kcontrol.clock import Clock
from kcontrol.controller import ControllerExpectations
from kcontrol.errors import NotFound, is_namespace_terminating
from kcontrol.logging import get_logger

from ..activepods import sort_active_pods
from ..podcontrol import PodControl
from ..podutil import filter_terminating_pods, is_pod_ready, new_controller_ref
from ._backoff import remaining_time_per_index
from ._context import SyncContext
from ._indexed import (
    add_completion_index,
    add_completion_index_env_variables,
    add_index_failure_count_annotations,
    first_pending_indexes,
    pod_generate_name_with_index,
    pods_for_removal_by_index,
)
from ._metrics import (
    ACTION_PODS_CREATED,
    ACTION_PODS_DELETED,
    ACTION_TRACKING,
    CREATE_NEW,
    RECREATE_FAILED,
    RECREATE_TERMINATING_OR_FAILED,
    JobMetrics,
)
from ._spec import (
    API_VERSION,
    JOB_TRACKING_FINALIZER,
    KIND,
    completions,
    has_backoff_limit_per_index,
    is_indexed,
    meta,
    only_replace_failed_pods,
    parallelism,
    spec,
    suspended,
)
from ._tracking import remove_tracking_finalizer_patch

__all__ = [
    "MAX_POD_CREATE_DELETE_PER_SYNC",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "SYNC_JOB_BATCH_PERIOD",
    "Deleted",
    "PodManager",
    "active_pods_for_removal",
]

_log = get_logger(__name__)

MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500
"""The most pods one sync creates or deletes (upstream ``MaxPodCreateDeletePerSync``)."""
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
SYNC_JOB_BATCH_PERIOD: Final = 1.0
"""Seconds by which pod events are batched into one sync, and the shortest requeue delay."""


@dataclass(frozen=True, slots=True)
class Deleted:
    """The outcome of deleting pods: how many went (``ready`` of them ready), and the first
    failure (a pod already gone is not one)."""

    ready: int
    total: int
    error: Exception | None


def active_pods_for_removal(
    job: dict[str, Any], pods: Sequence[Object], rm_at_least: int
) -> list[Object]:
    """The active pods to delete: for an Indexed Job those without a valid index and all but
    one pod per index, then - up to ``rm_at_least`` - the pods that disturb least (not ready,
    unscheduled, pending first)."""
    remove: list[Object] = []
    left: list[Object] = list(pods)
    if is_indexed(job):
        remove, left = pods_for_removal_by_index(pods, completions(job) or 0)
    if len(remove) < rm_at_least:
        remove.extend(sort_active_pods(left)[: rm_at_least - len(remove)])
    return remove


class PodManager:
    """Creates and deletes a Job's pods; see the module docstring.

    ``expectations`` are raised before any request and lowered for every request that failed
    or was skipped; ``enqueue_after(key, seconds)`` requeues a Job whose creations wait for
    the backoff.
    """

    def __init__(
        self,
        *,
        expectations: ControllerExpectations,
        pod_control: PodControl,
        clock: Clock,
        enqueue_after: Callable[[str, float], None],
        metrics: JobMetrics,
    ) -> None:
        self._expectations = expectations
        self._pod_control = pod_control
        self._clock = clock
        self._enqueue_after = enqueue_after
        self._metrics = metrics

    def _requeue_after_backoff(self, key: str, delay: float) -> None:
        self._enqueue_after(key, max(delay, SYNC_JOB_BATCH_PERIOD))

    # -- deleting ----------------------------------------------------------------------------

    async def delete_active_pods(self, job: dict[str, Any], pods: Sequence[Object]) -> Deleted:
        """Delete ``pods`` of a Job that is finishing, keeping their finalizers (the status
        tracking removes those once the pods are counted)."""
        namespace = meta(job).get("namespace", "")
        errors: list[Exception] = []
        deleted_ready = 0

        async def delete(pod: Object) -> None:
            nonlocal deleted_ready
            try:
                await self._pod_control.delete_pod(namespace, meta(pod)["name"], job)
            except NotFound:
                pass
            except Exception as error:
                errors.append(error)
            if is_pod_ready(pod):
                deleted_ready += 1

        async with asyncio.TaskGroup() as group:
            for pod in pods:
                group.create_task(delete(pod))
        return Deleted(deleted_ready, len(pods) - len(errors), errors[0] if errors else None)

    async def delete_job_pods(
        self, job: dict[str, Any], key: str, pods: Sequence[Object]
    ) -> Deleted:
        """Delete ``pods`` of a running Job: remove each one's finalizer first (the pod is not
        counted as failed: the controller chose to delete it), then delete it. A pod whose
        finalizer or deletion failed lowers the deletion expectations."""
        namespace = meta(job).get("namespace", "")
        errors: list[Exception] = []
        deleted_ready = 0

        def failed(error: Exception) -> None:
            self._expectations.deletion_observed(key)  # the informer will not see it
            if not isinstance(error, NotFound):  # a pod already gone counts as deleted
                errors.append(error)

        async def delete(pod: Object) -> None:
            nonlocal deleted_ready
            name = meta(pod)["name"]
            patch = remove_tracking_finalizer_patch(pod)
            if patch is not None:
                try:
                    await self._pod_control.patch_pod(namespace, name, patch)
                except Exception as error:
                    error.add_note("while removing the completion finalizer")
                    failed(error)
                    return
            try:
                await self._pod_control.delete_pod(namespace, name, job)
            except Exception as error:
                failed(error)
            if is_pod_ready(pod):
                deleted_ready += 1

        async with asyncio.TaskGroup() as group:
            for pod in pods:
                group.create_task(delete(pod))
        return Deleted(deleted_ready, len(pods) - len(errors), errors[0] if errors else None)

    # -- manageJob ---------------------------------------------------------------------------

    async def manage(self, ctx: SyncContext) -> tuple[int, str, Exception | None]:
        """Create or delete pods towards the wanted number; returns the number of active pods
        afterwards, the sync action (for the metrics) and the first failure. Lowers
        ``ctx.ready`` and raises ``ctx.terminating`` for the pods it deleted."""
        job, key = ctx.job, ctx.key
        active = len(ctx.active_pods)

        if suspended(job):
            _log.debug("deleting all active pods in suspended job", key=key, active=active)
            to_delete = active_pods_for_removal(job, ctx.active_pods, active)
            self._expectations.expect_deletions(key, len(to_delete))
            deleted = await self.delete_job_pods(job, key, to_delete)
            self._account(ctx, deleted)
            return active - deleted.total, ACTION_PODS_DELETED, deleted.error

        want = _want_active(job, ctx.succeeded, active)
        to_delete = active_pods_for_removal(job, ctx.active_pods, max(active - want, 0))
        to_delete = to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC]
        if to_delete:
            self._expectations.expect_deletions(key, len(to_delete))
            _log.debug("too many pods running for job", key=key, deleting=len(to_delete), want=want)
            deleted = await self.delete_job_pods(job, key, to_delete)
            self._account(ctx, deleted)
            return active - deleted.total, ACTION_PODS_DELETED, deleted.error

        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active, ACTION_TRACKING, None

        if not has_backoff_limit_per_index(job):
            remaining = ctx.new_backoff_record.remaining_time(self._clock.wall())
            if remaining > 0:
                # No pod was created or deleted: the active count stays what it is (reporting
                # fewer active than ready pods would be refused by the API server).
                self._requeue_after_backoff(key, remaining)
                return active, ACTION_PODS_CREATED, None
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)

        indexes: list[int] = []
        if is_indexed(job):
            indexes = first_pending_indexes(
                diff,
                completions(job) or 0,
                active_pods=ctx.active_pods,
                succeeded=ctx.succeeded_indexes,
                failed=ctx.failed_indexes,
                terminating_pods=(
                    filter_terminating_pods(ctx.pods) if only_replace_failed_pods(job) else ()
                ),
            )
            if has_backoff_limit_per_index(job):
                indexes, remaining = self._indexes_ready_for_creation(ctx, indexes)
                if remaining > 0:
                    self._requeue_after_backoff(key, remaining)
                    return active, ACTION_PODS_CREATED, None
            diff = len(indexes)

        active, error = await self._create_pods(ctx, diff, indexes, active)
        return active, ACTION_PODS_CREATED, error

    def _account(self, ctx: SyncContext, deleted: Deleted) -> None:
        ctx.terminating += deleted.total
        ctx.ready -= deleted.ready

    def _indexes_ready_for_creation(
        self, ctx: SyncContext, indexes: list[int]
    ) -> tuple[list[int], float]:
        """The ``indexes`` whose backoff is over; when none is, the shortest remaining wait."""
        now = self._clock.wall()
        ready: list[int] = []
        shortest: float | None = None
        for index in indexes:
            wait = remaining_time_per_index(
                now, ctx.pods_with_delayed_deletion_per_index.get(index)
            )
            if wait == 0:
                ready.append(index)
            elif shortest is None or wait < shortest:
                shortest = wait
        if ready:
            return ready, 0.0
        return ready, shortest or 0.0

    async def _create_pods(
        self, ctx: SyncContext, diff: int, indexes: list[int], active: int
    ) -> tuple[int, Exception | None]:
        job, key = ctx.job, ctx.key
        namespace = meta(job).get("namespace", "")
        name = str(meta(job).get("name", ""))
        self._expectations.expect_creations(key, diff)
        _log.debug("too few pods running", key=key, creating=diff)
        template = deep_copy(dict(spec(job).get("template") or {}))
        if is_indexed(job):
            add_completion_index_env_variables(template)
        finalizers = template.setdefault("metadata", {}).setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        controller_ref = new_controller_ref(job, API_VERSION, KIND)
        errors: list[Exception] = []
        succeeded = failed = 0
        active += diff
        pending = list(indexes)

        async def create(index: int | None) -> None:
            nonlocal active, succeeded, failed
            pod_template: dict[str, Any] = template
            generate_name = ""
            if index is not None:
                pod_template = deep_copy(template)
                add_completion_index(pod_template, index, name)
                generate_name = pod_generate_name_with_index(name, index)
                if has_backoff_limit_per_index(job):
                    add_index_failure_count_annotations(
                        pod_template, job, ctx.pods_with_delayed_deletion_per_index.get(index)
                    )
            try:
                await self._pod_control.create_pod(
                    namespace, pod_template, job, controller_ref, generate_name
                )
            except Exception as error:
                if is_namespace_terminating(error):
                    return  # every further creation will fail the same way
                _log.info("failed creation, decrementing expectations", key=key, error=str(error))
                self._expectations.creation_observed(key)
                active -= 1
                failed += 1
                errors.append(error)
                return
            succeeded += 1

        remaining = diff
        batch = min(remaining, SLOW_START_INITIAL_BATCH_SIZE)
        while remaining > 0:
            errors_before = len(errors)
            async with asyncio.TaskGroup() as group:
                for _ in range(batch):
                    group.create_task(create(pending.pop(0) if pending else None))
            skipped = remaining - batch
            if len(errors) > errors_before and skipped > 0:
                # The pods never attempted will not be observed either; the next sync retries.
                _log.info("slow-start failure, skipping creating pods", key=key, skipped=skipped)
                active -= skipped
                self._expectations.lower_expectations(key, skipped, 0)
                break
            remaining -= batch
            batch = min(2 * batch, remaining)
        self._record_creations(ctx, succeeded, failed)
        return active, errors[0] if errors else None

    def _record_creations(self, ctx: SyncContext, succeeded: int, failed: int) -> None:
        reason = CREATE_NEW
        if spec(ctx.job).get("podReplacementPolicy") == "Failed" and ctx.failed > 0:
            reason = RECREATE_FAILED
        elif ctx.failed > 0 or ctx.terminating > 0:
            reason = RECREATE_TERMINATING_OR_FAILED
        if succeeded > 0:
            self._metrics.pods_creation.labels(reason, "succeeded").inc(succeeded)
        if failed > 0:
            self._metrics.pods_creation.labels(reason, "failed").inc(failed)


def _want_active(job: dict[str, Any], succeeded: int, active: int) -> int:
    total = completions(job)
    if total is None:
        return active if succeeded > 0 else parallelism(job)
    return max(min(total - succeeded, parallelism(job)), 0)
