"""The CronJob controller: informers, event handlers and the queue (upstream
``cronjob_controllerv2.go``, Kubernetes 1.36).

Wiring as kube-controller-manager's: informers on CronJobs and Jobs; a rate-limited queue
named ``cronjob`` (the default controller rate limiter: failed keys retried after 5 ms
doubling, forever); 5 workers by default (``--concurrent-cron-job-syncs``). Events are
recorded as ``cronjob-controller``.

What queues a CronJob ``namespace/name``:

- the CronJob is added or deleted - at once; updated - at once, unless its ``schedule`` or
  ``timeZone`` changed: then at the next activation of the new schedule (plus 100 ms), which
  moves an earlier requeue forward and leaves a later one to find nothing to do. A new
  schedule that does not parse records ``UnParseableCronJobSchedule`` and queues nothing;
- a Job it controls (controller reference of kind CronJob, with its name and UID) is added,
  changes or is deleted; a Job whose controller reference moved queues its old owner too; a
  Job seen for the first time while being deleted counts as deleted.

Every sync ends in a requeue at the next activation (a ``Result.requeue_after``: the
delaying queue wakes the key then; nothing polls), except for a suspended CronJob, one being
deleted, and one whose schedule or time zone is invalid: those wait for an update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kcontrol.client import CRONJOBS, JOBS, Client, Object
from kcontrol.clock import Clock, RealClock
from kcontrol.controller import (
    Controller,
    ControllerOptions,
    Result,
    get_controller_of,
    key_func,
    resolve_controller_ref,
)
from kcontrol.events import EVENT_TYPE_WARNING, EventRecorder
from kcontrol.informers import (
    ResourceEventHandlerFuncs,
    SharedInformerFactory,
    deleted_object,
)
from kcontrol.logging import get_logger
from kcontrol.workqueue import RateLimitingQueue

from ._jobs import KIND
from ._metrics import metrics_for
from ._names import DEFAULT_WORKERS, NAME, QUEUE_NAME
from ._schedule import ScheduleError, parse_standard
from ._sync import CronJobSyncer
from ._times import format_schedule, next_schedule_time_duration

__all__ = ["DEFAULT_WORKERS", "NAME", "QUEUE_NAME", "CronJobController"]

_log = get_logger(__name__)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


class CronJobController:
    """Creates the Jobs of CronJobs on their schedules; see the module docstring and
    :mod:`~kcontrol_controllers.cronjob._sync`.

    Built from shared ``informers`` (CronJobs and Jobs), a ``client`` for every read and write,
    and a ``recorder`` whose source is ``cronjob-controller``. ``clock`` gives the wall time
    schedules are computed against and times the queue. :meth:`run` blocks until cancelled;
    the handlers and :meth:`sync` are public for tests.
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
    ) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._recorder = recorder
        cron_job_informer = informers.for_resource(CRONJOBS)
        job_informer = informers.for_resource(JOBS)
        self._cron_jobs = cron_job_informer.lister()
        self.controller = Controller(
            ControllerOptions(
                name=QUEUE_NAME,
                sync=self.sync,
                workers=workers,
                queue=RateLimitingQueue(name=QUEUE_NAME, clock=self._clock, registry=registry),
                has_synced=[job_informer.has_synced, cron_job_informer.has_synced],
                sync_timeout=sync_timeout,
                max_retries=None,
                clock=self._clock,
                registry=registry,
            )
        )
        self.metrics = metrics_for(registry)
        self.syncer = CronJobSyncer(
            client=client,
            cron_job_lister=self._cron_jobs,
            job_lister=job_informer.lister(),
            recorder=recorder,
            metrics=self.metrics,
            clock=self._clock,
        )
        job_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.add_job, update_func=self.update_job, delete_func=self.delete_job
            )
        )
        cron_job_informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=self.controller.enqueue_object,
                update_func=self.update_cron_job,
                delete_func=self.controller.enqueue_object,
            )
        )

    async def run(self) -> None:
        """Wait for the caches, then sync CronJobs until cancelled."""
        await self.controller.run()

    async def sync(self, key: str) -> Result | None:
        """Sync one CronJob; see :class:`~kcontrol_controllers.cronjob._sync.CronJobSyncer`."""
        return await self.syncer.sync(key)

    # -- Job events ----------------------------------------------------------------------------

    def _resolve_controller_ref(
        self, namespace: str, controller_ref: Mapping[str, Any]
    ) -> Object | None:
        """The cached CronJob a controller reference names, if it still has that UID."""
        return resolve_controller_ref(self._cron_jobs, namespace, controller_ref, KIND)

    def _enqueue_owner(self, job: Mapping[str, Any], controller_ref: Mapping[str, Any]) -> None:
        cron_job = self._resolve_controller_ref(
            str(_meta(job).get("namespace", "")), controller_ref
        )
        if cron_job is not None:
            self.controller.enqueue(key_func(cron_job))

    def add_job(self, job: Object) -> None:
        if _meta(job).get("deletionTimestamp") is not None:
            # Seen for the first time while terminating (a restart): not a creation.
            self.delete_job(job)
            return
        controller_ref = get_controller_of(job)
        if controller_ref is not None:
            self._enqueue_owner(job, controller_ref)

    def update_job(self, old: Object, cur: Object) -> None:
        if _meta(cur).get("resourceVersion") == _meta(old).get("resourceVersion"):
            return  # a periodic resync
        cur_ref, old_ref = get_controller_of(cur), get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            self._enqueue_owner(old, old_ref)
        if cur_ref is not None:
            self._enqueue_owner(cur, cur_ref)

    def delete_job(self, obj: Any) -> None:
        job = deleted_object(obj, "Job")
        if job is None:
            return
        controller_ref = get_controller_of(job)
        if controller_ref is not None:  # nobody cares about orphans being deleted
            self._enqueue_owner(job, controller_ref)

    # -- CronJob events ------------------------------------------------------------------------

    def update_cron_job(self, old: Object, cur: Object) -> None:
        """Queue the CronJob at once, or - its schedule or time zone changed - at the next
        activation of the new schedule."""
        old_spec, cur_spec = old.get("spec") or {}, cur.get("spec") or {}
        if old_spec.get("schedule") == cur_spec.get("schedule") and old_spec.get(
            "timeZone"
        ) == cur_spec.get("timeZone"):
            # Anything else changed: sync now; a change too late for this activation is
            # seen at the next one.
            self.controller.enqueue(key_func(cur))
            return
        text, _ = format_schedule(cur)  # the sync records UnsupportedSchedule, not this
        try:
            schedule = parse_standard(text)
        except ScheduleError as error:
            # The user's to fix: no sync until the spec changes again.
            _log.info(
                "unparseable schedule for cronjob",
                cronjob=key_func(cur),
                schedule=cur_spec.get("schedule"),
                error=str(error),
            )
            self._recorder.eventf(
                cur,
                EVENT_TYPE_WARNING,
                "UnParseableCronJobSchedule",
                "unparseable schedule for cronjob: %s",
                cur_spec.get("schedule") or "",
            )
            return
        delay = next_schedule_time_duration(cur, self._clock.wall(), schedule)
        # No activation left (upstream: a negative delay): sync now, which reports it.
        self.controller.enqueue_after(
            key_func(cur), 0.0 if delay is None else delay.total_seconds()
        )
