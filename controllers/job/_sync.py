"""The Job sync: read the caches, decide how the Job stands, manage its pods, track its
status. A port of ``syncJob`` and ``getPodsForJob``, level-based and in upstream's order::

    stale cache?                      -> requeue through the rate limiter (not an error)
    Job gone?                         -> forget everything about it
    managed by another controller?    -> leave it alone
    finished (Complete/Failed)?       -> forget its backoff, done
    marked finished by this controller, not yet seen so?  -> wait for the informer
    unknown completion mode?          -> Warning UnknownCompletionMode, done
    claim its pods                    (adopt orphans with the finalizer, release the rest)
    how does it stand - first match wins:
        SuccessCriteriaMet already    -> it succeeded
        FailureTarget already         -> it fails (same reason)
        a pod matched a FailJob rule  -> it fails: PodFailurePolicy
        too many failures             -> it fails: BackoffLimitExceeded
        past activeDeadlineSeconds    -> it fails: DeadlineExceeded (else: sync again then)
        Indexed: too many failed indexes, or every index done with some failed
                                      -> it fails: MaxFailedIndexesExceeded / FailedIndexes
        Indexed: a success policy rule holds -> it succeeds: SuccessPolicy
    it ends                           -> delete every active pod
    otherwise                         -> manage pods (expectations satisfied, not being
                                         deleted); enough successes -> it succeeds:
                                         CompletionsReached; record suspend / resume
    track the status                  (see _status)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kcontrol.client import JOBS, PODS, Client, Object, deep_copy
from kcontrol.clock import Clock
from kcontrol.controller import (
    ClaimError,
    ConsistencyStore,
    ControllerExpectations,
    ControllerRefManager,
    Result,
    recheck_owner,
)
from kcontrol.errors import NotFound, StaleCache
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.informers import Indexer, Lister, split_meta_namespace_key
from kcontrol.labels import selector_from_label_selector
from kcontrol.logging import get_logger
from kcontrol.metatime import format_time, parse_time

from ..conditions import get_condition
from ..jobutil import is_job_finished
from ..podutil import filter_active_pods, filter_pods_by_owner
from ._backoff import BackoffStore
from ._conditions import (
    BACKOFF_LIMIT_EXCEEDED,
    BACKOFF_LIMIT_EXCEEDED_MESSAGE,
    COMPLETIONS_REACHED,
    COMPLETIONS_REACHED_MESSAGE,
    DEADLINE_EXCEEDED,
    DEADLINE_EXCEEDED_MESSAGE,
    FAILED,
    FAILED_INDEXES,
    FAILED_INDEXES_MESSAGE,
    FAILURE_TARGET,
    MAX_FAILED_INDEXES_EXCEEDED,
    MAX_FAILED_INDEXES_EXCEEDED_MESSAGE,
    POD_FAILURE_POLICY,
    SUCCESS_CRITERIA_MET,
    SUCCESS_POLICY,
    SUSPENDED,
    ensure_condition_status,
    new_condition,
    success_criteria_met_condition,
)
from ._context import SyncContext
from ._indexed import (
    calculate_failed_indexes,
    calculate_succeeded_indexes,
    completion_index,
    pods_with_delayed_deletion_per_index,
)
from ._manage import PodManager
from ._metrics import ACTION_RECONCILING, JobMetrics
from ._pod_failure_policy import match_pod_failure_policy
from ._pods import count_ready_pods, count_terminating_pods, is_pod_failed, is_pod_succeeded
from ._spec import (
    CONTROLLER_KIND,
    INDEXED,
    JOB_TRACKING_FINALIZER,
    KIND,
    NON_INDEXED,
    active_deadline_seconds,
    backoff_limit,
    completion_mode,
    completions,
    has_backoff_limit_per_index,
    is_indexed,
    managed_by_external_controller,
    max_failed_indexes,
    meta,
    pod_failure_policy,
    spec,
    success_policy,
    suspended,
)
from ._status import StatusTracker, ensure_status
from ._success_policy import match_success_policy
from ._tracking import (
    FinalizerExpectations,
    UncountedTerminatedPods,
    has_tracking_finalizer,
    uid_of,
)

__all__ = ["JobSyncer"]

_log = get_logger(__name__)


class JobSyncer:
    """Syncs one Job key at a time; see the module docstring.

    ``client`` reads live Jobs (the pre-adoption check) and claims pods; ``job_lister`` and
    ``pod_indexer`` (with the pod controller index) are the caches; ``enqueue_after(key,
    seconds)`` schedules a sync (the active deadline). ``finished_jobs`` holds the UIDs of the
    Jobs this controller marked finished and the informer has not shown so yet.
    """

    def __init__(
        self,
        *,
        client: Client,
        job_lister: Lister,
        pod_indexer: Indexer,
        expectations: ControllerExpectations,
        finalizer_expectations: FinalizerExpectations,
        backoff_store: BackoffStore,
        pod_manager: PodManager,
        tracker: StatusTracker,
        consistency: ConsistencyStore,
        recorder: EventRecorder,
        metrics: JobMetrics,
        clock: Clock,
        enqueue_after: Callable[[str, float], None],
        finished_jobs: set[str],
    ) -> None:
        self._client = client
        self._job_lister = job_lister
        self._pod_indexer = pod_indexer
        self._expectations = expectations
        self._finalizer_expectations = finalizer_expectations
        self._backoff_store = backoff_store
        self._pod_manager = pod_manager
        self._tracker = tracker
        self._consistency = consistency
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock
        self._enqueue_after = enqueue_after
        self._finished_jobs = finished_jobs

    async def sync(self, key: str) -> Result | None:
        """Converge the Job ``key`` (``namespace/name``). Raises to have the key retried
        with backoff (a claim or status write failure, then a failure to create or delete
        pods), and with :class:`~kcontrol.errors.StaleCache` (not an error) while the
        informers lag behind this controller's own writes."""
        namespace, name = split_meta_namespace_key(key)
        if not namespace or not name:
            raise ValueError(f"invalid job key {key!r}: either namespace or name is missing")
        try:
            self._consistency.ensure_ready(key)
        except StaleCache as stale:
            self._metrics.stale_sync_skips.labels(stale.resource.group, stale.resource.plural).inc()
            raise  # the runner retries it (see Controller)
        try:
            shared = self._job_lister.get(namespace, name)
        except NotFound:
            _log.debug("Job has been deleted", key=key)
            self._expectations.delete_expectations(key)
            self._finalizer_expectations.delete_expectations(key)
            self._consistency.clear(key)
            self._backoff_store.remove(key)
            return None
        controller_name = managed_by_external_controller(shared)
        if controller_name is not None:
            _log.debug("skipping a Job managed by another controller", key=key, by=controller_name)
            return None
        if is_job_finished(shared):
            self._backoff_store.remove(key)
            self._consistency.clear(key, uid_of(shared))
            self._finished_jobs.discard(uid_of(shared))
            return None
        if uid_of(shared) in self._finished_jobs:
            _log.debug("skipping a Job marked finished, not yet seen so", key=key)
            return None
        if completion_mode(shared) not in (NON_INDEXED, INDEXED):
            self._recorder.event(
                shared,
                EVENT_TYPE_WARNING,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            )
            return None

        started = self._clock.now()
        outcome = {"action": ACTION_RECONCILING, "result": "error"}
        try:
            await self._sync_job(key, deep_copy(shared), outcome)
            outcome["result"] = "success"
        finally:
            self._metrics.observe_sync(
                completion_mode(shared),
                outcome["result"],
                outcome["action"],
                self._clock.now() - started,
            )
        return None

    async def _sync_job(self, key: str, job: dict[str, Any], outcome: dict[str, str]) -> None:
        job_status = ensure_status(job)
        # Read before listing pods: a pod observed after this check is listed too.
        satisfied = self._expectations.satisfied_expectations(key)
        pods = await self._pods_for_job(key, job)
        active_pods = filter_active_pods(pods)
        uncounted = UncountedTerminatedPods.from_status(job_status)
        ctx = SyncContext(
            key=key,
            job=job,
            pods=pods,
            active_pods=active_pods,
            uncounted=uncounted,
            expected_removed_finalizers=self._finalizer_expectations.expected_uids(key),
            new_backoff_record=self._backoff_store.new_record(key, [], []),
            ready=count_ready_pods(active_pods),
            terminating=count_terminating_pods(pods),
        )
        active = len(active_pods)
        new_succeeded, new_failed = _new_finished_pods(ctx)
        ctx.succeeded = (
            int(job_status.get("succeeded") or 0) + len(new_succeeded) + len(uncounted.succeeded)
        )
        ctx.failed = (
            int(job_status.get("failed") or 0)
            + _not_ignored(job, new_failed)
            + len(uncounted.failed)
        )
        now = self._clock.wall()
        if job_status.get("startTime") is None and not suspended(job):
            job_status["startTime"] = format_time(now)
        ctx.new_backoff_record = self._backoff_store.new_record(key, new_succeeded, new_failed)

        self._decide_failure(ctx)
        if is_indexed(job):
            self._decide_indexed(ctx)

        suspend_changed = False
        manage_error: Exception | None = None
        if ctx.finished_condition is not None:
            deleted = await self._pod_manager.delete_active_pods(job, active_pods)
            if deleted.total != active or not satisfied:
                # Pods may remain, or be missing from the cache: the end is not certain yet.
                ctx.finished_condition = None
            active -= deleted.total
            ctx.terminating += deleted.total
            ctx.ready -= deleted.ready
            manage_error = deleted.error
        else:
            managed = False
            if satisfied and meta(job).get("deletionTimestamp") is None:
                active, outcome["action"], manage_error = await self._pod_manager.manage(ctx)
                managed = True
            total = completions(job)
            if total is None:
                # Any success completes a work queue, once nothing runs any more.
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= total and active == 0
            if complete:
                ctx.finished_condition = new_condition(
                    SUCCESS_CRITERIA_MET,
                    "True",
                    COMPLETIONS_REACHED,
                    COMPLETIONS_REACHED_MESSAGE,
                    self._clock.wall(),
                )
            elif managed:
                # Only the sync that managed pods records suspending or resuming.
                suspend_changed = self._record_suspension(job)

        needs_update = (
            suspend_changed
            or active != int(job_status.get("active") or 0)
            or ctx.ready != job_status.get("ready")
            or ctx.terminating != job_status.get("terminating")
        )
        job_status["active"] = active
        job_status["ready"] = ctx.ready
        job_status["terminating"] = ctx.terminating
        try:
            await self._tracker.track(ctx, needs_update)
        except Exception as error:
            error.add_note("while tracking status")
            raise
        if manage_error is not None:
            raise manage_error

    # -- deciding how the Job stands ---------------------------------------------------------

    def _decide_failure(self, ctx: SyncContext) -> None:
        """The end the Job's conditions, pod failure policy, backoff limit or deadline
        decide, in that order; schedules a sync for the deadline otherwise."""
        job, key = ctx.job, ctx.key
        now = self._clock.wall()
        met = success_criteria_met_condition(job)
        if met is not None:
            ctx.finished_condition = dict(met)
            return
        target = get_condition(job["status"], FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            ctx.finished_condition = new_condition(
                FAILED, "True", target.get("reason", ""), target.get("message", ""), now
            )
            return
        message = _fail_job_message(job, ctx.pods)
        if message is not None:
            ctx.finished_condition = new_condition(
                FAILURE_TARGET, "True", POD_FAILURE_POLICY, message, now
            )
            return
        if ctx.failed > backoff_limit(job) or _past_backoff_limit_on_failure(job, ctx.pods):
            ctx.finished_condition = new_condition(
                FAILURE_TARGET, "True", BACKOFF_LIMIT_EXCEEDED, BACKOFF_LIMIT_EXCEEDED_MESSAGE, now
            )
            return
        deadline = active_deadline_seconds(job)
        started = parse_time(job["status"].get("startTime"))
        if deadline is None or started is None or suspended(job):
            return
        elapsed = (now - started).total_seconds()
        if elapsed >= deadline:
            ctx.finished_condition = new_condition(
                FAILURE_TARGET, "True", DEADLINE_EXCEEDED, DEADLINE_EXCEEDED_MESSAGE, now
            )
        else:
            _log.debug("Job has activeDeadlineSeconds; will sync again", key=key)
            self._enqueue_after(key, deadline - elapsed)

    def _decide_indexed(self, ctx: SyncContext) -> None:
        """The succeeded and failed indexes, and the end they decide: too many failed
        indexes, every index done with failures, or a success policy rule."""
        job, now = ctx.job, self._clock.wall()
        total = completions(job) or 0
        ctx.prev_succeeded_indexes, ctx.succeeded_indexes = calculate_succeeded_indexes(
            job, ctx.pods
        )
        ctx.succeeded = ctx.succeeded_indexes.total()
        if has_backoff_limit_per_index(job):
            failed = calculate_failed_indexes(job, ctx.pods)
            ctx.failed_indexes = failed
            if ctx.finished_condition is None:
                limit = max_failed_indexes(job)
                if limit is not None and failed.total() > limit:
                    ctx.finished_condition = new_condition(
                        FAILURE_TARGET,
                        "True",
                        MAX_FAILED_INDEXES_EXCEEDED,
                        MAX_FAILED_INDEXES_EXCEEDED_MESSAGE,
                        now,
                    )
                elif failed.total() > 0 and failed.total() + ctx.succeeded_indexes.total() >= total:
                    ctx.finished_condition = new_condition(
                        FAILURE_TARGET, "True", FAILED_INDEXES, FAILED_INDEXES_MESSAGE, now
                    )
            ctx.pods_with_delayed_deletion_per_index = pods_with_delayed_deletion_per_index(
                job,
                ctx.pods,
                active_pods=ctx.active_pods,
                succeeded=ctx.succeeded_indexes,
                failed=failed,
                expected_removed=ctx.expected_removed_finalizers,
            )
        if ctx.finished_condition is None:
            message = match_success_policy(success_policy(job), total, ctx.succeeded_indexes)
            if message is not None:
                ctx.finished_condition = new_condition(
                    SUCCESS_CRITERIA_MET, "True", SUCCESS_POLICY, message, now
                )

    def _record_suspension(self, job: dict[str, Any]) -> bool:
        """``Suspended=True`` (start time cleared: the scheduling directives may change while
        suspended) or ``False`` on resume (start time reset: ``activeDeadlineSeconds`` counts
        continuous activity), with the ``Suspended`` / ``Resumed`` event; whether the
        condition changed."""
        job_status = job["status"]
        conditions: list[dict[str, Any]] = list(job_status.get("conditions") or [])
        now = self._clock.wall()
        if suspended(job):
            changed = ensure_condition_status(
                conditions, SUSPENDED, "True", "JobSuspended", "Job suspended", now=now
            )
            if changed:
                job_status["conditions"] = conditions
                self._recorder.event(job, EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
                job_status.pop("startTime", None)
            return changed
        changed = ensure_condition_status(
            conditions, SUSPENDED, "False", "JobResumed", "Job resumed", now=now
        )
        if changed:
            job_status["conditions"] = conditions
            self._recorder.event(job, EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
            job_status["startTime"] = format_time(now)
        return changed

    # -- claiming pods -----------------------------------------------------------------------

    async def _pods_for_job(self, key: str, job: dict[str, Any]) -> list[Object]:
        """The pods the Job owns after adopting matching orphans (with the finalizer) and
        releasing pods that stopped matching; raises what the claim could not do."""
        selector = selector_from_label_selector(spec(job).get("selector"))
        candidates = filter_pods_by_owner(self._pod_indexer, job, KIND, include_orphans=True)
        manager = ControllerRefManager(
            self._client,
            job,
            selector,
            CONTROLLER_KIND,
            PODS,
            can_adopt=recheck_owner(self._client, JOBS, job),
            finalizers=(JOB_TRACKING_FINALIZER,),
        )
        given = {id(pod) for pod in candidates}
        try:
            claimed = await manager.claim(candidates)
        except ClaimError as error:
            self._record_adoptions(key, job, error.claimed, given)
            raise
        self._record_adoptions(key, job, claimed, given)
        return claimed

    def _record_adoptions(
        self, key: str, job: Mapping[str, Any], claimed: list[Object], given: set[int]
    ) -> None:
        for position, pod in enumerate(claimed):
            if id(pod) in given:
                continue
            version = str(meta(pod).get("resourceVersion") or "")
            self._consistency.wrote_at(key, uid_of(job), PODS, version)
            if not has_tracking_finalizer(pod):  # adopted: counted as if it had it
                adopted = deep_copy(pod)
                adopted["metadata"].setdefault("finalizers", []).append(JOB_TRACKING_FINALIZER)
                claimed[position] = adopted


def _new_finished_pods(ctx: SyncContext) -> tuple[list[Object], list[Object]]:
    """The succeeded and failed pods not counted yet: they have the finalizer (and no
    removal pending), are not in the uncounted lists, and, for an Indexed Job, have a valid
    index."""
    succeeded: list[Object] = []
    failed: list[Object] = []
    indexed = is_indexed(ctx.job)
    total = completions(ctx.job) or 0
    for pod in ctx.pods:
        uid = uid_of(pod)
        if not has_tracking_finalizer(pod) or uid in ctx.expected_removed_finalizers:
            continue
        if indexed and not 0 <= completion_index(pod) < total:
            continue
        if is_pod_succeeded(pod) and uid not in ctx.uncounted.succeeded:
            succeeded.append(pod)
        elif is_pod_failed(pod, ctx.job) and uid not in ctx.uncounted.failed:
            failed.append(pod)
    return succeeded, failed


def _not_ignored(job: Mapping[str, Any], failed: list[Object]) -> int:
    """How many of the ``failed`` pods count against the backoff limit."""
    policy = pod_failure_policy(job)
    if policy is None:
        return len(failed)
    return sum(1 for pod in failed if match_pod_failure_policy(policy, pod).count_failed)


def _fail_job_message(job: Mapping[str, Any], pods: list[Object]) -> str | None:
    """The message of the first failed pod matching a ``FailJob`` rule."""
    policy = pod_failure_policy(job)
    if policy is None:
        return None
    for pod in pods:
        if is_pod_failed(pod, job):
            message = match_pod_failure_policy(policy, pod).job_failure_message
            if message is not None:
                return message
    return None


def _past_backoff_limit_on_failure(job: Mapping[str, Any], pods: list[Object]) -> bool:
    """With ``restartPolicy: OnFailure`` containers restart in place: the restarts of the
    pending and running pods count as failures (``> 0`` already fails a limit of 0)."""
    template_spec = (spec(job).get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        pod_status = pod.get("status") or {}
        if pod_status.get("phase") not in ("Running", "Pending"):
            continue
        for field in ("initContainerStatuses", "containerStatuses"):
            restarts += sum(int(c.get("restartCount") or 0) for c in pod_status.get(field) or ())
    limit = backoff_limit(job)
    if limit == 0:
        return restarts > 0
    return restarts >= limit
