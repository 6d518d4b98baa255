"""Tracking a Job's status: count finished pods exactly once, remove their finalizers, and
write the interim and terminal conditions. A port of ``trackJobStatusAndRemoveFinalizers``,
``flushUncountedAndRemoveFinalizers``, ``enactJobFinished`` and ``recordJobFinished``.

One pass (see :mod:`._tracking` for the protocol):

1. every pod that still has the finalizer and may release it - it succeeded, it failed (unless
   with ``backoffLimitPerIndex`` its replacement is still to be created), or the Job is
   finishing or being deleted - is recorded: a succeeded index in ``completedIndexes``, any
   other UID in ``uncountedTerminatedPods`` (at most :data:`MAX_UNCOUNTED_PODS` per pass);
2. the interim ``FailureTarget`` / ``SuccessCriteriaMet`` condition, if the sync decided the
   Job's end, is added;
3. that status is written (only if something changed), then the finalizers are removed, then
   the counters absorb the UIDs whose finalizer is gone;
4. once nothing is uncounted and no pod is terminating, the terminal ``Failed`` /
   ``Complete`` condition is added (with ``completionTime`` for ``Complete``), the status
   written, and the Job's ``Completed`` (or failure reason) event recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kcontrol.client import JOBS, Client, Object
from kcontrol.clock import Clock
from kcontrol.errors import NotFound
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.logging import get_logger

from ..podcontrol import PodControl
from ._backoff import BackoffStore
from ._conditions import (
    COMPLETE,
    FAILED,
    FAILURE_TARGET,
    ensure_condition_status,
    is_success_criteria_met,
    new_condition,
    success_criteria_met_condition,
)
from ._context import SyncContext
from ._indexed import (
    UNKNOWN_COMPLETION_INDEX,
    completion_index,
    parse_indexes,
    sort_by_completion_index,
)
from ._metrics import JobMetrics
from ._pod_failure_policy import match_pod_failure_policy
from ._pods import is_pod_failed, is_pod_succeeded
from ._spec import (
    completion_mode,
    completions,
    has_backoff_limit_per_index,
    is_indexed,
    meta,
    pod_failure_policy,
)
from ._tracking import (
    FinalizerExpectations,
    clean_uncounted_pods_without_finalizers,
    has_tracking_finalizer,
    remove_tracking_finalizer_patch,
    uid_of,
)

__all__ = ["MAX_UNCOUNTED_PODS", "StatusTracker", "ensure_status"]

_log = get_logger(__name__)

MAX_UNCOUNTED_PODS: Final = 500
"""The most pods one pass records in ``uncountedTerminatedPods`` (keeping the status around
20 KB, and one big Job from starving the others; upstream ``MaxUncountedPods``)."""

JobWritten = Callable[[Object], object]
"""Called with each Job status the API server returned."""


def ensure_status(job: dict[str, Any]) -> dict[str, Any]:
    """The Job's ``status``, created if missing, with ``uncountedTerminatedPods`` holding two
    lists (the API server leaves empty ones out)."""
    job_status: dict[str, Any] = job.setdefault("status", {})
    uncounted = job_status.get("uncountedTerminatedPods")
    if not isinstance(uncounted, dict):
        uncounted = job_status["uncountedTerminatedPods"] = {}
    uncounted["succeeded"] = list(uncounted.get("succeeded") or ())
    uncounted["failed"] = list(uncounted.get("failed") or ())
    return job_status


@dataclass(frozen=True, slots=True)
class _Counters:
    """The status counters a pass started from (for the metrics)."""

    succeeded: int
    failed: int
    completed_indexes: str
    failed_indexes: str | None

    @classmethod
    def of(cls, job: Mapping[str, Any]) -> _Counters:
        job_status = job.get("status") or {}
        return cls(
            int(job_status.get("succeeded") or 0),
            int(job_status.get("failed") or 0),
            str(job_status.get("completedIndexes") or ""),
            job_status.get("failedIndexes"),
        )


class StatusTracker:
    """Runs the status pass of a sync; see the module docstring.

    ``client`` writes ``jobs/status`` (``on_written`` sees each result), ``pod_control``
    patches the finalizers away; ``finalizer_expectations`` remembers removals not yet
    observed; the Job's backoff record is stored once the status recording its new failures
    is written; ``finished_jobs`` receives the UID of each Job marked finished, until the
    informer shows it so.
    """

    def __init__(
        self,
        *,
        client: Client,
        pod_control: PodControl,
        finalizer_expectations: FinalizerExpectations,
        backoff_store: BackoffStore,
        recorder: EventRecorder,
        metrics: JobMetrics,
        clock: Clock,
        finished_jobs: set[str],
        on_written: JobWritten | None = None,
    ) -> None:
        self._client = client
        self._pod_control = pod_control
        self._finalizer_expectations = finalizer_expectations
        self._backoff_store = backoff_store
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock
        self._finished_jobs = finished_jobs
        self._on_written = on_written

    async def update_status(self, job: dict[str, Any]) -> dict[str, Any]:
        """PUT ``jobs/status``; returns the Job as the server stored it."""
        updated = await self._client.update_status(JOBS, job, namespace=meta(job).get("namespace"))
        if self._on_written is not None:
            self._on_written(updated)
        ensure_status(updated)
        return updated

    async def _write(self, job: dict[str, Any], what: str) -> dict[str, Any]:
        try:
            return await self.update_status(job)
        except Exception as error:
            error.add_note(f"while {what}")
            raise

    async def track(self, ctx: SyncContext, needs_flush: bool) -> None:
        """The status pass; ``needs_flush`` says the caller changed the status already.
        Raises what failed (the key is retried)."""
        job = ctx.job
        job_status = ensure_status(job)
        indexed = is_indexed(job)
        total = completions(job) or 0
        pods: Sequence[Object] = sort_by_completion_index(ctx.pods) if indexed else ctx.pods
        expected = ctx.expected_removed_finalizers
        with_finalizer = {
            uid_of(pod)
            for pod in pods
            if has_tracking_finalizer(pod) and uid_of(pod) not in expected
        }
        old = _Counters.of(job)
        if clean_uncounted_pods_without_finalizers(job_status, with_finalizer):
            needs_flush = True
        uncounted = job_status["uncountedTerminatedPods"]
        policy = pod_failure_policy(job)
        by_policy_action: dict[str, int] = {}
        to_release: list[Object] = []
        new_succeeded_indexes: list[int] = []
        reached_max = False
        for pod in pods:
            uid = uid_of(pod)
            if not has_tracking_finalizer(pod) or uid in expected:
                continue  # processed by an earlier sync
            considered_failed = is_pod_failed(pod, job)
            if not self._can_remove_finalizer(ctx, pod, considered_failed):
                continue
            to_release.append(pod)
            if is_pod_succeeded(pod) and uid not in ctx.uncounted.failed:
                if indexed:
                    # The index is enough to never count a success twice.
                    index = completion_index(pod)
                    if (
                        index != UNKNOWN_COMPLETION_INDEX
                        and index < total
                        and not ctx.prev_succeeded_indexes.has(index)
                    ):
                        new_succeeded_indexes.append(index)
                        needs_flush = True
                elif uid not in ctx.uncounted.succeeded:
                    uncounted["succeeded"].append(uid)
                    needs_flush = True
            elif considered_failed or (
                ctx.finished_condition is not None
                and not is_success_criteria_met(ctx.finished_condition)
            ):
                # A Job that ends counts every pod it did not see succeed as failed.
                index = completion_index(pod)
                valid = not indexed or (index != UNKNOWN_COMPLETION_INDEX and index < total)
                if uid not in ctx.uncounted.failed and valid:
                    counted = True
                    if policy is not None:
                        match = match_pod_failure_policy(policy, pod)
                        if match.action is not None:
                            by_policy_action[match.action] = (
                                by_policy_action.get(match.action, 0) + 1
                            )
                        counted = match.count_failed
                    if counted:
                        uncounted["failed"].append(uid)
                        needs_flush = True
            recorded = (
                len(new_succeeded_indexes) + len(uncounted["succeeded"]) + len(uncounted["failed"])
            )
            if recorded >= MAX_UNCOUNTED_PODS:
                # The rest waits for the next sync, which this pass's writes trigger.
                reached_max = True
                break
        if indexed:
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_ordered_indexes(
                new_succeeded_indexes
            )
            completed = str(ctx.succeeded_indexes)
            if completed != (job_status.get("completedIndexes") or ""):
                needs_flush = True
            job_status["succeeded"] = ctx.succeeded_indexes.total()
            job_status["completedIndexes"] = completed
            failed_text = str(ctx.failed_indexes) if ctx.failed_indexes is not None else None
            if job_status.get("failedIndexes") != failed_text:
                if failed_text is None:
                    job_status.pop("failedIndexes", None)
                else:
                    job_status["failedIndexes"] = failed_text
                needs_flush = True
        if self._prepare_final_condition(ctx):
            needs_flush = True
        needs_flush, error, old = await self._flush_and_remove_finalizers(
            ctx,
            to_release,
            with_finalizer,
            old=old,
            by_policy_action=by_policy_action,
            needs_flush=needs_flush,
        )
        if error is not None:
            raise error
        finished = not reached_max and self._enact_finished(ctx)
        if finished:
            needs_flush = True
        if needs_flush:
            ctx.job = await self._write(ctx.job, "removing uncounted pods from status")
            if finished:
                assert ctx.finished_condition is not None
                self._record_finished(ctx.job, ctx.finished_condition)
                self._finished_jobs.add(uid_of(ctx.job))
            self._record_pods_finished(ctx.job, old)

    # -- steps -------------------------------------------------------------------------------

    @staticmethod
    def _can_remove_finalizer(ctx: SyncContext, pod: Object, considered_failed: bool) -> bool:
        """The Job is being deleted or is ending, or the pod succeeded, or it failed and is
        not the failed pod whose removal waits for its index's replacement."""
        if (
            meta(ctx.job).get("deletionTimestamp") is not None
            or ctx.finished_condition is not None
            or is_pod_succeeded(pod)
        ):
            return True
        if not considered_failed:
            return False
        if has_backoff_limit_per_index(ctx.job):
            index = completion_index(pod)
            if index != UNKNOWN_COMPLETION_INDEX:
                waiting = ctx.pods_with_delayed_deletion_per_index.get(index)
                if waiting is not None and uid_of(waiting) == uid_of(pod):
                    _log.debug("delaying pod finalizer removal until its replacement exists")
                    return False
        return True

    def _prepare_final_condition(self, ctx: SyncContext) -> bool:
        """Add the interim condition to the status (returns whether it was added) and turn
        ``ctx.finished_condition`` into the terminal one it announces."""
        condition = ctx.finished_condition
        if condition is None:
            return False
        added = False
        now = self._clock.wall()
        conditions: list[dict[str, Any]] = ctx.job["status"].setdefault("conditions", [])
        if condition.get("type") == FAILURE_TARGET:
            conditions.append(condition)
            added = True
            ctx.finished_condition = new_condition(
                FAILED, "True", condition.get("reason", ""), condition.get("message", ""), now
            )
        elif is_success_criteria_met(condition):
            if success_criteria_met_condition(ctx.job) is None:
                conditions.append(condition)
                added = True
            ctx.finished_condition = new_condition(
                COMPLETE, "True", condition.get("reason", ""), condition.get("message", ""), now
            )
        return added

    async def _flush_and_remove_finalizers(
        self,
        ctx: SyncContext,
        to_release: Sequence[Object],
        with_finalizer: set[str],
        *,
        old: _Counters,
        by_policy_action: Mapping[str, int],
        needs_flush: bool,
    ) -> tuple[bool, Exception | None, _Counters]:
        """Write the recorded pods (if anything changed), remove their finalizers, absorb
        the released UIDs into the counters; on a failed removal write that progress at
        once. Returns whether the status still needs writing, the first failure, and the
        counters the metrics have seen."""
        if needs_flush:
            ctx.job = await self._write(ctx.job, "adding uncounted pods to status")
            self._backoff_store.update(ctx.new_backoff_record)
            self._record_pods_finished(ctx.job, old)
            old = _Counters.of(ctx.job)
            needs_flush = False
        for action, count in by_policy_action.items():
            self._metrics.pod_failures_handled_by_failure_policy.labels(action).inc(count)
        error: Exception | None = None
        if to_release:
            released, error = await self._remove_finalizers(ctx.key, to_release)
            for pod, done in zip(to_release, released, strict=True):
                if done:
                    with_finalizer.discard(uid_of(pod))
        if clean_uncounted_pods_without_finalizers(ensure_status(ctx.job), with_finalizer):
            needs_flush = True
        if error is not None and needs_flush:
            await self._write(ctx.job, "removing uncounted pods from status")
        return needs_flush, error, old

    async def _remove_finalizers(
        self, key: str, pods: Sequence[Object]
    ) -> tuple[list[bool], Exception | None]:
        """Patch the finalizer off every pod, concurrently; whether each is gone (a pod
        already deleted counts), and the first failure."""
        self._finalizer_expectations.expect_finalizers_removed(key, [uid_of(p) for p in pods])
        released = [False] * len(pods)
        errors: list[Exception] = []

        async def release(position: int, pod: Object) -> None:
            patch = remove_tracking_finalizer_patch(pod)
            if patch is None:
                return
            try:
                await self._pod_control.patch_pod(
                    str(meta(pod).get("namespace", "")), str(meta(pod)["name"]), patch
                )
            except Exception as error:
                # No update will show this removal: stop waiting for it.
                self._finalizer_expectations.finalizer_removal_observed(key, uid_of(pod))
                if not isinstance(error, NotFound):
                    _log.error("removing tracking finalizer", key=key, error=str(error))
                    errors.append(error)
                    return
            released[position] = True

        async with asyncio.TaskGroup() as group:
            for position, pod in enumerate(pods):
                group.create_task(release(position, pod))
        return released, errors[0] if errors else None

    def _enact_finished(self, ctx: SyncContext) -> bool:
        """Add the terminal condition once no pod is left uncounted or terminating."""
        condition = ctx.finished_condition
        if condition is None:
            return False
        job_status = ensure_status(ctx.job)
        uncounted = job_status["uncountedTerminatedPods"]
        pending = len(uncounted["succeeded"]) + len(uncounted["failed"])
        if pending > 0:
            _log.debug(
                "delaying the terminal condition: uncounted pods", key=ctx.key, count=pending
            )
            return False
        if ctx.terminating > 0:
            _log.debug(
                "delaying the terminal condition: terminating pods",
                key=ctx.key,
                count=ctx.terminating,
            )
            return False
        conditions: list[dict[str, Any]] = job_status.setdefault("conditions", [])
        ensure_condition_status(
            conditions,
            condition["type"],
            condition["status"],
            condition.get("reason", ""),
            condition.get("message", ""),
            now=self._clock.wall(),
        )
        if condition["type"] == COMPLETE:
            job_status["completionTime"] = condition["lastTransitionTime"]
        return True

    # -- events and metrics ------------------------------------------------------------------

    def _record_finished(self, job: dict[str, Any], condition: Mapping[str, Any]) -> None:
        mode = completion_mode(job)
        reason = str(condition.get("reason") or "")
        if condition.get("type") == COMPLETE:
            total = completions(job)
            succeeded = int((job.get("status") or {}).get("succeeded") or 0)
            if total is not None and succeeded > total:
                self._recorder.event(
                    job,
                    EVENT_TYPE_WARNING,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                )
            self._recorder.event(job, EVENT_TYPE_NORMAL, "Completed", "Job completed")
            self._metrics.jobs_finished.labels(mode, "succeeded", reason).inc()
        else:
            self._recorder.event(job, EVENT_TYPE_WARNING, reason, str(condition.get("message", "")))
            self._metrics.jobs_finished.labels(mode, "failed", reason).inc()

    def _record_pods_finished(self, job: dict[str, Any], old: _Counters) -> None:
        mode = completion_mode(job)
        new = _Counters.of(job)
        if is_indexed(job):
            total = completions(job) or 0
            label = "perIndex" if has_backoff_limit_per_index(job) else "global"
            succeeded_diff = 0
            if new.completed_indexes != old.completed_indexes:
                succeeded_diff = (
                    parse_indexes(new.completed_indexes, total).total()
                    - parse_indexes(old.completed_indexes, total).total()
                )
            _inc(self._metrics.finished_indexes.labels("succeeded", label), succeeded_diff)
            if has_backoff_limit_per_index(job) and new.failed_indexes != old.failed_indexes:
                failed_diff = _count(new.failed_indexes, total) - _count(old.failed_indexes, total)
                _inc(self._metrics.finished_indexes.labels("failed", label), failed_diff)
        else:
            succeeded_diff = new.succeeded - old.succeeded
        _inc(self._metrics.pods_finished.labels(mode, "succeeded"), succeeded_diff)
        _inc(self._metrics.pods_finished.labels(mode, "failed"), new.failed - old.failed)


def _count(text: str | None, total: int) -> int:
    return parse_indexes(text, total).total() if text is not None else 0


def _inc(counter: Any, amount: int) -> None:
    if amount > 0:
        counter.inc(amount)
