"""The Job controller: informers, event handlers, and its two queues.

Wiring as kube-controller-manager's: informers on Jobs and Pods; a queue named ``job`` whose
failed keys are retried after 1 s doubling to 1 minute, forever; a second queue,
``job_orphan_pod``, for pods whose tracking finalizer nobody else will remove; as many workers
on each as ``--concurrent-job-syncs`` (default 5). Events are recorded as ``job-controller``.

What queues a Job ``namespace/name``:

- the Job is added, or deleted - at once; updated - at once when its spec changed (a new
  generation), else batched (after :data:`~._manage.SYNC_JOB_BATCH_PERIOD`); a change of
  ``activeDeadlineSeconds`` also schedules a sync for the new deadline;
- a pod it controls is created (a creation is observed), changes, starts terminating or is
  deleted (a deletion is observed; a finalizer gone counts as a removal observed) - batched,
  so that a burst of pod events makes one sync;
- an orphan pod its selector matches appears or changes labels or owner (to adopt it).

What queues an orphan pod: an orphan pod, or a pod of a finished or deleted Job, that still
has the finalizer; and, when a Job finishes or is deleted, every pod its selector matches.
The orphan worker removes the finalizer unless the pod belongs to a running Job (or to a
Job another controller manages).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from prometheus_client import CollectorRegistry

from kcontrol.client import JOBS, PODS, Client, Object
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
from kcontrol.errors import NotFound, SelectorError
from kcontrol.events import EventRecorder
from kcontrol.informers import (
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deleted_object,
    split_meta_namespace_key,
)
from kcontrol.labels import parse, selector_from_label_selector
from kcontrol.logging import get_logger
from kcontrol.metatime import parse_time
from kcontrol.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

from ..jobutil import is_job_finished
from ..podcontrol import PodControl
from ..podutil import POD_CONTROLLER_INDEX, ensure_index, pod_controller_index_func
from ._backoff import BackoffStore
from ._manage import SYNC_JOB_BATCH_PERIOD, PodManager
from ._metrics import metrics_for
from ._names import DEFAULT_WORKERS, NAME, ORPHAN_QUEUE_NAME, QUEUE_NAME
from ._spec import (
    API_VERSION,
    KIND,
    active_deadline_seconds,
    managed_by_external_controller,
    meta,
    spec,
)
from ._status import StatusTracker
from ._sync import JobSyncer
from ._tracking import (
    FinalizerExpectations,
    has_tracking_finalizer,
    is_finished_pod_with_tracking_finalizer,
    remove_tracking_finalizer_patch,
    uid_of,
)

__all__ = [
    "API_BACKOFF",
    "DEFAULT_WORKERS",
    "MAX_API_BACKOFF",
    "NAME",
    "ORPHAN_QUEUE_NAME",
    "QUEUE_NAME",
    "JobController",
]

_log = get_logger(__name__)

API_BACKOFF: Final = 1.0
MAX_API_BACKOFF: Final = 60.0
"""Failed syncs are retried after 1 s, doubling up to a minute (upstream
``DefaultJobApiBackOff`` / ``MaxJobApiBackOff``), forever."""

_ORPHAN_POD = "pod:"
_ORPHAN_SELECTOR = "selector:"


def _queue(name: str, clock: Clock, registry: CollectorRegistry | None) -> RateLimitingQueue[str]:
    return RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(API_BACKOFF, MAX_API_BACKOFF),
        name=name,
        clock=clock,
        registry=registry,
    )


class JobController:
    """Runs Jobs to completion; see the module docstring.

    Built from shared ``informers`` (Jobs and Pods; it adds the pod controller index), a
    ``client`` for every read and write, and a ``recorder`` whose source is
    ``job-controller``. :meth:`run` blocks until cancelled; the handlers, :meth:`sync` and
    :meth:`sync_orphan_pod` are public for tests.
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
        stale_cache_consistency: bool = True,
        sync_timeout: float | None = None,
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        job_informer = informers.for_resource(JOBS)
        pod_informer = informers.for_resource(PODS)
        ensure_index(pod_informer, POD_CONTROLLER_INDEX, pod_controller_index_func)
        self._job_lister = job_informer.lister()
        self._pod_lister = pod_informer.lister()
        has_synced = [pod_informer.has_synced, job_informer.has_synced]
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                queue=_queue(QUEUE_NAME, self._clock, registry),
                has_synced=has_synced,
                sync_timeout=sync_timeout,
                clock=self._clock,
                registry=registry,
            )
        )
        self.orphan_controller = Controller(
            ControllerOptions(
                name=ORPHAN_QUEUE_NAME,
                sync=self.sync_orphan_pod,
                workers=workers,
                queue=_queue(ORPHAN_QUEUE_NAME, self._clock, registry),
                has_synced=has_synced,
                sync_timeout=sync_timeout,
                clock=self._clock,
                registry=registry,
            )
        )
        self.metrics = metrics_for(registry)
        self.expectations = ControllerExpectations(clock=self._clock)
        self.finalizer_expectations = FinalizerExpectations()
        self.backoff_store = BackoffStore()
        self.finished_jobs: set[str] = set()
        trackers = {
            PODS: lambda: pod_informer.last_sync_resource_version,
            JOBS: lambda: job_informer.last_sync_resource_version,
        }
        self.consistency = ConsistencyStore(trackers if stale_cache_consistency else {})
        self._pod_control = PodControl(
            client, recorder, on_write=partial(self.consistency.wrote_owned, PODS)
        )
        tracker = StatusTracker(
            client=client,
            pod_control=self._pod_control,
            finalizer_expectations=self.finalizer_expectations,
            backoff_store=self.backoff_store,
            recorder=recorder,
            metrics=self.metrics,
            clock=self._clock,
            finished_jobs=self.finished_jobs,
            on_written=self._job_written,
        )
        manager = PodManager(
            expectations=self.expectations,
            pod_control=self._pod_control,
            clock=self._clock,
            enqueue_after=self.controller.enqueue_after,
            metrics=self.metrics,
        )
        self._syncer = JobSyncer(
            client=client,
            job_lister=self._job_lister,
            pod_indexer=pod_informer.indexer,
            expectations=self.expectations,
            finalizer_expectations=self.finalizer_expectations,
            backoff_store=self.backoff_store,
            pod_manager=manager,
            tracker=tracker,
            consistency=self.consistency,
            recorder=recorder,
            metrics=self.metrics,
            clock=self._clock,
            enqueue_after=self.controller.enqueue_after,
            finished_jobs=self.finished_jobs,
        )
        job_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_job, update_func=self.update_job, delete_func=self.delete_job
            )
        )
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_pod,
                update_func=self.update_pod,
                delete_func=lambda obj: self.delete_pod(obj, final=True),
            )
        )

    async def run(self) -> None:
        """Wait for the caches, then sync Jobs and orphan pods until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.controller.run())
            group.create_task(self.orphan_controller.run())

    async def sync(self, key: str) -> Result | None:
        """Sync one Job; see :class:`~kcontrol_controllers.job._sync.JobSyncer`."""
        return await self._syncer.sync(key)

    # -- writes seen by the stale-cache check ------------------------------------------------

    def _job_written(self, job: Object) -> None:
        version = str(meta(job).get("resourceVersion") or "")
        self.consistency.wrote_at(key_func(job), uid_of(job), JOBS, version)

    # -- queueing ----------------------------------------------------------------------------

    def _enqueue_batched(self, job: Mapping[str, Any]) -> None:
        self.controller.enqueue_after(key_func(job), SYNC_JOB_BATCH_PERIOD)

    def _enqueue_orphan_pod(self, pod: Mapping[str, Any]) -> None:
        self.orphan_controller.enqueue(_ORPHAN_POD + key_func(pod))

    def _enqueue_label_selector(self, job: Mapping[str, Any]) -> None:
        """Queue every pod the Job's selector matches for an orphan check."""
        try:
            selector = selector_from_label_selector(spec(job).get("selector"))
        except SelectorError as error:
            _log.error("Job has an invalid label selector", key=key_func(job), error=str(error))
            return
        if selector.selects_nothing():
            return
        namespace = meta(job).get("namespace", "")
        self.orphan_controller.enqueue(f"{_ORPHAN_SELECTOR}{namespace}/{selector}")

    def _resolve_controller_ref(
        self, namespace: str, controller_ref: Mapping[str, Any]
    ) -> Object | None:
        """The cached Job a controller reference names, if it still has that UID."""
        return resolve_controller_ref(self._job_lister, namespace, controller_ref, KIND)

    def _pod_jobs(self, pod: Mapping[str, Any]) -> list[Object]:
        """The cached Jobs whose selector matches ``pod``'s labels (an orphan's candidates)."""
        labels = meta(pod).get("labels") or {}
        if not labels:
            return []
        found = []
        for job in self._job_lister.list(meta(pod).get("namespace", "")):
            try:
                selector = selector_from_label_selector(spec(job).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                found.append(job)
        if len(found) > 1:
            _log.error(
                "user error: more than one Job is selecting pods with these labels", labels=labels
            )
        return found

    # -- Job events --------------------------------------------------------------------------

    def add_job(self, job: Object) -> None:
        self.controller.enqueue(key_func(job))
        controller_name = managed_by_external_controller(job)
        if controller_name is not None:
            self.metrics.jobs_by_external_controller.labels(controller_name).inc()

    def update_job(self, old: Object, cur: Object) -> None:
        """Queue the Job (at once for a spec change); a finished Job gets its pods checked
        for leftover finalizers instead; a new ``activeDeadlineSeconds`` schedules a sync."""
        key = key_func(cur)
        if is_job_finished(cur):
            self._enqueue_label_selector(cur)
            return
        if meta(cur).get("generation") == meta(old).get("generation"):
            self.controller.enqueue_after(key, SYNC_JOB_BATCH_PERIOD)
        else:
            self.controller.enqueue(key)
        started = (cur.get("status") or {}).get("startTime")
        deadline = active_deadline_seconds(cur)
        if started is None or deadline is None:
            return
        if active_deadline_seconds(old) != deadline:
            start = parse_time(started)
            if start is not None:
                passed = (self._clock.wall() - start).total_seconds()
                self.controller.enqueue_after(key, deadline - passed)

    def delete_job(self, obj: Any) -> None:
        """Queue the Job (its sync forgets it) and every pod its selector matches."""
        job = deleted_object(obj, KIND)
        if job is None:
            return
        key = key_func(job)
        self.controller.enqueue(key)
        self.consistency.clear(key, uid_of(job))
        self.finished_jobs.discard(uid_of(job))
        self._enqueue_label_selector(job)
        self.backoff_store.remove(key)

    # -- pod events --------------------------------------------------------------------------

    def add_pod(self, pod: Object) -> None:
        self.metrics.finished_pod_tracking_changed(
            False, is_finished_pod_with_tracking_finalizer(pod)
        )
        if meta(pod).get("deletionTimestamp") is not None:
            # Seen for the first time while terminating (a restart): not a creation.
            self.delete_pod(pod, final=False)
            return
        controller_ref = get_controller_of(pod)
        if controller_ref is not None:
            job = self._resolve_controller_ref(meta(pod).get("namespace", ""), controller_ref)
            if job is None:
                return
            self.expectations.creation_observed(key_func(job))
            self._enqueue_batched(job)
            return
        if has_tracking_finalizer(pod):
            self._enqueue_orphan_pod(pod)
        for job in self._pod_jobs(pod):
            self._enqueue_batched(job)

    def update_pod(self, old: Object, cur: Object) -> None:
        self.metrics.finished_pod_tracking_changed(
            is_finished_pod_with_tracking_finalizer(old),
            is_finished_pod_with_tracking_finalizer(cur),
        )
        old_meta, cur_meta = meta(old), meta(cur)
        if cur_meta.get("resourceVersion") == old_meta.get("resourceVersion"):
            return  # a periodic resync
        if cur_meta.get("deletionTimestamp") is not None:
            # Act on graceful deletion now, not when the pod is finally removed.
            self.delete_pod(cur, final=False)
            return
        # Only the new state matters: during an ownership transfer the finalizer may be
        # added and removed again, and both updates may arrive as one.
        finalizer_removed = not has_tracking_finalizer(cur)
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_job = self._resolve_controller_ref(old_meta.get("namespace", ""), old_ref)
            if old_job is not None:
                if finalizer_removed:
                    self.finalizer_expectations.finalizer_removal_observed(
                        key_func(old_job), uid_of(cur)
                    )
                self._enqueue_batched(old_job)
        if cur_ref is not None:
            job = self._resolve_controller_ref(cur_meta.get("namespace", ""), cur_ref)
            if job is None:
                return
            if finalizer_removed:
                self.finalizer_expectations.finalizer_removal_observed(key_func(job), uid_of(cur))
            self._enqueue_batched(job)
            return
        if has_tracking_finalizer(cur):
            self._enqueue_orphan_pod(cur)
        labels_changed = (cur_meta.get("labels") or {}) != (old_meta.get("labels") or {})
        if labels_changed or ref_changed:
            for job in self._pod_jobs(cur):
                self._enqueue_batched(job)

    def delete_pod(self, obj: Any, *, final: bool) -> None:
        """A pod was deleted (``final``) or started terminating: observe the deletion (and,
        if its finalizer is gone, the removal) for its Job; a pod no running Job will count
        goes to the orphan queue if it keeps the finalizer."""
        pod = deleted_object(obj, "Pod")
        if pod is None:
            return
        if final:
            self.metrics.finished_pod_tracking_changed(
                is_finished_pod_with_tracking_finalizer(pod), False
            )
        controller_ref = get_controller_of(pod)
        has_finalizer = has_tracking_finalizer(pod)
        if controller_ref is None:
            if has_finalizer:  # the garbage collector may have removed the reference
                self._enqueue_orphan_pod(pod)
            return
        job = self._resolve_controller_ref(meta(pod).get("namespace", ""), controller_ref)
        if job is None or is_job_finished(job):
            if has_finalizer:  # no sync will remove it
                self._enqueue_orphan_pod(pod)
            return
        key = key_func(job)
        self.expectations.deletion_observed(key)
        if final or not has_finalizer:
            self.finalizer_expectations.finalizer_removal_observed(key, uid_of(pod))
        self._enqueue_batched(job)

    # -- orphan pods ---------------------------------------------------------------------------

    async def sync_orphan_pod(self, key: str) -> Result | None:
        """Remove the tracking finalizer from the pod ``pod:<namespace>/<name>``, or from
        every pod ``selector:<namespace>/<selector>`` matches, that no running Job of this
        controller will count."""
        if key.startswith(_ORPHAN_POD):
            namespace, name = split_meta_namespace_key(key.removeprefix(_ORPHAN_POD))
            try:
                pod = self._pod_lister.get(namespace, name)
            except NotFound:
                _log.debug("orphan pod has been deleted", pod=key)
                return None
            await self._release_orphan(pod)
            return None
        if key.startswith(_ORPHAN_SELECTOR):
            namespace, _, text = key.removeprefix(_ORPHAN_SELECTOR).partition("/")
            for pod in self._pod_lister.list(namespace, parse(text)):
                try:
                    await self._release_orphan(pod)
                except Exception as error:
                    _log.error("syncing orphan pod failed", pod=key_func(pod), error=str(error))
            return None
        raise ValueError(f"unknown orphan pod key {key!r}")

    async def _release_orphan(self, pod: Object) -> None:
        controller_ref = get_controller_of(pod)
        namespace = str(meta(pod).get("namespace", ""))
        if controller_ref is not None:
            if (
                controller_ref.get("kind") != KIND
                or controller_ref.get("apiVersion") != API_VERSION
            ):
                return  # not a Job's pod: its finalizer is not ours to remove
            job = self._resolve_controller_ref(namespace, controller_ref)
            if job is not None:
                if managed_by_external_controller(job) is not None:
                    return
                if not is_job_finished(job):
                    return  # adopted: the Job's sync counts it
        patch = remove_tracking_finalizer_patch(pod)
        if patch is None:
            return
        with contextlib.suppress(NotFound):
            await self._pod_control.patch_pod(namespace, str(meta(pod)["name"]), patch)
