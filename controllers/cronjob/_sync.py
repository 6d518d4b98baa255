"""One sync of a CronJob: upstream's ``sync``, ``syncCronJob``, ``cleanupFinishedJobs`` and
``deleteJob`` (``cronjob_controllerv2.go``, Kubernetes 1.36).

A sync works on a copy of the cached CronJob and the Jobs whose controller reference names it
(by name, as upstream: the labels of the template do not matter). In order:

1. history: finished Jobs past ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit``
   are deleted, oldest start first;
2. the active list is made true: an unfinished Job of ours missing from ``status.active`` is
   reported ``UnexpectedJob`` (after a fresh read of the CronJob, whose newer status may have
   it: that CronJob is then the one the sync goes on with); a finished one is dropped from it
   (``SawCompletedJob``) and a successful one raises ``status.lastSuccessfulTime``; an active
   reference to a Job the cache does not have is read from the API server and dropped when
   the Job is gone (``MissingJob``);
3. nothing more for a CronJob being deleted; an unknown ``spec.timeZone``
   (``UnknownTimeZone``), ``suspend``, or a schedule that does not parse
   (``UnparseableSchedule``) or never fires (``InvalidSchedule``) stop the sync *without a
   requeue*: only an update of the CronJob brings it back, so a bad schedule never loops;
4. the activation to run: the most recent one not yet run (more than 100 missed:
   ``TooManyMissedTimes``, and only the most recent is run); none, one run already (its Job
   in the active list by name, or ``lastScheduleTime``), one older than
   ``startingDeadlineSeconds`` (``MissSchedule``), or ``Forbid`` with a Job still active
   (``JobAlreadyActive``) -> requeued for the next activation;
5. ``Replace`` deletes the active Jobs first; then the Job is created (``SuccessfulCreate``),
   named after the activation so that a second create for it is refused: ``AlreadyExists``
   for a Job of ours not in the active list adds it there (a status write lost earlier),
   for someone else's Job changes nothing;
6. the new Job goes into ``status.active``, ``lastScheduleTime`` is the activation, and the
   CronJob is requeued for the activation after it.

Every status change is written once at the end, with one ``PUT`` of the status subresource.
The requeue is the delaying queue's: ``nextScheduleTimeDuration`` - exactly the next
activation plus 100 ms - and nothing polls. Failures are retried rate-limited, forever.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kcontrol.client import CRONJOBS, JOBS, Client, Object, deep_copy
from kcontrol.clock import Clock
from kcontrol.controller import Result, get_controller_of
from kcontrol.errors import AlreadyExists, NotFound, error_message, is_namespace_terminating
from kcontrol.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kcontrol.informers import Lister, split_meta_namespace_key
from kcontrol.logging import get_logger
from kcontrol.metatime import parse_time

from ..jobutil import (
    JOB_COMPLETE,
    JOB_FAILED,
    finished_condition_type,
    is_job_finished,
    is_job_succeeded,
)
from ..podutil import is_controlled_by
from ._jobs import (
    by_job_start_time,
    delete_from_active_list,
    format_rfc3339,
    in_active_list,
    in_active_list_by_name,
    job_from_template,
    job_name,
    job_reference,
)
from ._metrics import CronJobMetrics
from ._schedule import ScheduleError, parse_standard
from ._times import (
    InvalidSchedule,
    NextActivation,
    UnknownTimeZone,
    format_schedule,
    load_location,
    next_schedule_time,
    next_schedule_time_duration,
)

__all__ = ["BACKGROUND", "CronJobSyncer", "SyncOutcome", "go_quote"]

_log = get_logger(__name__)

BACKGROUND: Final = "Background"
"""How Jobs are deleted (``realJobControl.DeleteJob``): the garbage collector removes their
pods afterwards."""

_UNSUPPORTED_SCHEDULE = (
    "CRON_TZ or TZ used in schedule %s is not officially supported, see "
    "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (a double-quoted, escaped literal)."""
    return json.dumps(text, ensure_ascii=False)


def _rfc1123z(moment: datetime) -> str:
    """Go's ``t.UTC().Format(time.RFC1123Z)``, independent of the locale."""
    utc = moment.astimezone(UTC)
    return (
        f"{_WEEKDAYS[utc.weekday()]}, {utc.day:02d} {_MONTHS[utc.month - 1]} {utc.year} "
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d} +0000"
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> str:
    return f"{_meta(obj).get('namespace', '')}/{_meta(obj).get('name', '')}"


@dataclass(slots=True)
class SyncOutcome:
    """What :meth:`CronJobSyncer.sync_cron_job` decided (upstream's triple): when to sync
    again (``None``: only when something changes), whether the CronJob's status changed, and
    the error that ended the sync, if any (a status change before it is still written)."""

    requeue_after: float | None = None
    update_status: bool = False
    error: Exception | None = None


class CronJobSyncer:
    """Syncs CronJobs; see the module docstring. Reads through the listers of the shared
    informers, writes through ``client``, records events on the CronJob with ``recorder``,
    and reads the wall time from ``clock``."""

    def __init__(
        self,
        *,
        client: Client,
        cron_job_lister: Lister,
        job_lister: Lister,
        recorder: EventRecorder,
        metrics: CronJobMetrics,
        clock: Clock,
    ) -> None:
        self._client = client
        self._cron_jobs = cron_job_lister
        self._jobs = job_lister
        self._recorder = recorder
        self._metrics = metrics
        self._clock = clock

    async def sync(self, key: str) -> Result | None:
        """Sync the CronJob ``namespace/name`` (upstream ``sync``): clean up its history, run
        :meth:`sync_cron_job`, write the status once if anything changed (a failed write is
        retried), then requeue for the next activation or report the sync's error."""
        namespace, name = split_meta_namespace_key(key)
        try:
            cached = self._cron_jobs.get(namespace, name)
        except NotFound:
            _log.debug("CronJob not found, may be it is deleted", cronjob=key)
            return None
        jobs = self.jobs_to_be_reconciled(cached)
        cron_job = deep_copy(cached)
        cleaned_up = await self.cleanup_finished_jobs(cron_job, jobs)
        outcome = await self.sync_cron_job(cron_job, jobs)
        if outcome.error is not None:
            _log.info("error reconciling cronjob", cronjob=key, error=str(outcome.error))
        if cleaned_up or outcome.update_status:
            try:
                await self._client.update_status(CRONJOBS, cron_job, namespace=namespace)
            except Exception as error:
                _log.info(
                    "unable to update status for cronjob",
                    cronjob=key,
                    resource_version=_meta(cached).get("resourceVersion"),
                    error=str(error),
                )
                raise
        if outcome.requeue_after is not None:
            _log.debug("re-queuing cronjob", cronjob=key, requeue_after=outcome.requeue_after)
            return Result(requeue_after=outcome.requeue_after)
        if outcome.error is not None:
            raise outcome.error
        return None

    def jobs_to_be_reconciled(self, cron_job: Mapping[str, Any]) -> list[Object]:
        """The cached Jobs of the CronJob's namespace whose controller reference names it
        (upstream ``getJobsToBeReconciled``: by name only, whatever their labels)."""
        name = _meta(cron_job).get("name")
        found = []
        for job in self._jobs.list(str(_meta(cron_job).get("namespace", ""))):
            ref = get_controller_of(job)
            if ref is not None and ref.get("name") == name:
                found.append(job)
        return found

    # -- history ---------------------------------------------------------------------------------

    async def cleanup_finished_jobs(self, cron_job: Object, jobs: list[Object]) -> bool:
        """Delete the oldest finished Jobs past the history limits (upstream
        ``cleanupFinishedJobs``), dropping them from ``cron_job``'s active list. True when
        any was deleted (the status is to be written)."""
        spec = cron_job.get("spec") or {}
        successful_limit = spec.get("successfulJobsHistoryLimit")
        failed_limit = spec.get("failedJobsHistoryLimit")
        if successful_limit is None and failed_limit is None:
            return False
        successful = [job for job in jobs if finished_condition_type(job) == JOB_COMPLETE]
        failed = [job for job in jobs if finished_condition_type(job) == JOB_FAILED]
        update_status = False
        if successful_limit is not None and await self._remove_oldest_jobs(
            cron_job, successful, int(successful_limit)
        ):
            update_status = True
        if failed_limit is not None and await self._remove_oldest_jobs(
            cron_job, failed, int(failed_limit)
        ):
            update_status = True
        return update_status

    async def _remove_oldest_jobs(self, cron_job: Object, jobs: list[Object], limit: int) -> bool:
        to_delete = len(jobs) - limit
        if to_delete <= 0:
            return False
        _log.debug(
            "cleaning up jobs from CronJob list",
            cronjob=_key(cron_job),
            delete=to_delete,
            jobs=len(jobs),
        )
        deleted = False
        for job in by_job_start_time(jobs)[:to_delete]:
            if await self._delete_job(cron_job, job):
                deleted = True
        return deleted

    async def _delete_job(self, cron_job: Object, job: Mapping[str, Any]) -> bool:
        """Delete ``job`` (in the background) and drop it from the active list (upstream
        ``deleteJob``); False, after a ``FailedDelete`` event, when the delete failed."""
        meta = _meta(job)
        try:
            await self._client.delete(
                JOBS,
                str(meta.get("name")),
                namespace=str(meta.get("namespace", "")),
                propagation_policy=BACKGROUND,
            )
        except Exception as error:
            self._recorder.eventf(
                cron_job, EVENT_TYPE_WARNING, "FailedDelete", "Deleted job: %s",
                error_message(error),
            )  # fmt: skip
            _log.error(
                "error deleting job from cronjob",
                job=_key(job),
                cronjob=_key(cron_job),
                error=str(error),
            )
            return False
        delete_from_active_list(cron_job, str(meta.get("uid", "")))
        self._recorder.eventf(
            cron_job, EVENT_TYPE_NORMAL, "SuccessfulDelete", "Deleted job %s", meta.get("name")
        )
        return True

    # -- syncCronJob -----------------------------------------------------------------------------

    async def sync_cron_job(self, cron_job: Object, jobs: list[Object]) -> SyncOutcome:
        """Reconcile ``cron_job`` (changed in place) with its ``jobs`` at the clock's wall
        time (upstream ``syncCronJob``); see the module docstring."""
        outcome = SyncOutcome()
        try:
            outcome.requeue_after = await self._sync_cron_job(cron_job, jobs, outcome)
        except Exception as error:  # CancelledError is not an Exception: it propagates
            outcome.error = error
        return outcome

    async def _sync_cron_job(
        self, cron_job: Object, jobs: list[Object], outcome: SyncOutcome
    ) -> float | None:
        now = self._clock.wall()
        namespace = str(_meta(cron_job).get("namespace", ""))
        name = str(_meta(cron_job).get("name", ""))

        children: set[str] = set()
        for job in jobs:
            uid = str(_meta(job).get("uid", ""))
            children.add(uid)
            found = in_active_list(cron_job, uid)
            finished = is_job_finished(job)
            if not found and not finished:
                fresh = await self._client.get(CRONJOBS, name, namespace=namespace)
                if in_active_list(fresh, uid):
                    # The cache is behind the API server: go on with the CronJob as it is
                    # there (upstream rebinds its variable; what the sync writes at the end is
                    # still its own copy, as here).
                    cron_job = fresh
                    continue
                # Unfinished, ours, and not in the active list: we crashed between creating it
                # and writing the status, the Job cache is ahead of the CronJob cache, or
                # someone created a Job for us to adopt.
                self._recorder.eventf(
                    cron_job,
                    EVENT_TYPE_WARNING,
                    "UnexpectedJob",
                    "Saw a job that the controller did not create or forgot: %s",
                    _meta(job).get("name"),
                )
            elif finished:
                if found:
                    condition = finished_condition_type(job)
                    delete_from_active_list(cron_job, uid)
                    self._recorder.eventf(
                        cron_job,
                        EVENT_TYPE_NORMAL,
                        "SawCompletedJob",
                        "Saw completed job: %s, condition: %s",
                        _meta(job).get("name"),
                        condition,
                    )
                    outcome.update_status = True
                if is_job_succeeded(job):
                    # Not only for Jobs in the active list: any successful Job counts.
                    status = cron_job.setdefault("status", {})
                    completed = (job.get("status") or {}).get("completionTime")
                    if status.get("lastSuccessfulTime") is None:
                        if completed is not None:
                            status["lastSuccessfulTime"] = completed
                        outcome.update_status = True
                    completed_at = parse_time(completed)
                    last_success = parse_time(status.get("lastSuccessfulTime"))
                    if completed_at is not None and (
                        last_success is None or completed_at > last_success
                    ):
                        status["lastSuccessfulTime"] = completed
                        outcome.update_status = True

        # An active reference whose Job the cache does not have: read it from the API server
        # (the Job watch may just be slow) and drop it only when it is really gone, or the
        # CronJob would stay active forever.
        for ref in list((cron_job.get("status") or {}).get("active") or []):
            if ref.get("uid") in children:
                continue
            try:
                await self._client.get(
                    JOBS, str(ref.get("name")), namespace=str(ref.get("namespace", ""))
                )
            except NotFound:
                self._recorder.eventf(
                    cron_job,
                    EVENT_TYPE_NORMAL,
                    "MissingJob",
                    "Active job went missing: %s",
                    ref.get("name"),
                )
                delete_from_active_list(cron_job, str(ref.get("uid", "")))
                outcome.update_status = True

        if _meta(cron_job).get("deletionTimestamp") is not None:
            return None  # being deleted: only the status is kept true

        spec = cron_job.get("spec") or {}
        time_zone = spec.get("timeZone")
        if time_zone is not None:
            try:
                load_location(str(time_zone))
            except UnknownTimeZone as error:
                _log.debug("not starting job because timeZone is invalid", cronjob=_key(cron_job))
                self._recorder.eventf(
                    cron_job,
                    EVENT_TYPE_WARNING,
                    "UnknownTimeZone",
                    "invalid timeZone: %s: %s",
                    go_quote(str(time_zone)),
                    str(error),
                )
                return None

        if spec.get("suspend"):
            _log.debug("not starting job because the cron is suspended", cronjob=_key(cron_job))
            return None

        text, unsupported = format_schedule(cron_job)
        if unsupported:
            self._recorder.eventf(
                cron_job,
                EVENT_TYPE_WARNING,
                "UnsupportedSchedule",
                _UNSUPPORTED_SCHEDULE,
                go_quote(str(spec.get("schedule") or "")),
            )
        try:
            schedule = parse_standard(text)
        except ScheduleError as error:
            _log.info("unparseable schedule", cronjob=_key(cron_job), error=str(error))
            self._recorder.eventf(
                cron_job,
                EVENT_TYPE_WARNING,
                "UnparseableSchedule",
                "unparseable schedule: %s : %s",
                go_quote(str(spec.get("schedule") or "")),
                str(error),
            )
            return None

        try:
            scheduled_time, too_many_missed = next_schedule_time(cron_job, now, schedule)
        except InvalidSchedule as error:
            _log.info("invalid schedule", cronjob=_key(cron_job), error=str(error))
            self._recorder.eventf(
                cron_job,
                EVENT_TYPE_WARNING,
                "InvalidSchedule",
                "invalid schedule: %s : %s",
                spec.get("schedule") or "",
                str(error),
            )
            return None
        if too_many_missed:
            self._recorder.event(
                cron_job,
                EVENT_TYPE_WARNING,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
            _log.info("too many missed times", cronjob=_key(cron_job))
        if scheduled_time is None:
            # Nothing due: after a restart, or woken early by an event.
            _log.debug("no unmet start times", cronjob=_key(cron_job))
            return self._requeue_after(cron_job, now, schedule)

        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled_time + timedelta(seconds=int(deadline)) < now:
            _log.debug("missed starting window", cronjob=_key(cron_job))
            self._recorder.eventf(
                cron_job,
                EVENT_TYPE_WARNING,
                "MissSchedule",
                "Missed scheduled time to start a job: %s",
                _rfc1123z(scheduled_time),
            )
            return self._requeue_after(cron_job, now, schedule)

        last_scheduled = parse_time((cron_job.get("status") or {}).get("lastScheduleTime"))
        if in_active_list_by_name(cron_job, namespace, job_name(cron_job, scheduled_time)) or (
            last_scheduled is not None and last_scheduled == scheduled_time
        ):
            _log.debug(
                "not starting job because the scheduled time is already processed",
                cronjob=_key(cron_job),
                schedule=scheduled_time.isoformat(),
            )
            return self._requeue_after(cron_job, now, schedule)

        policy = spec.get("concurrencyPolicy")
        active = list((cron_job.get("status") or {}).get("active") or [])
        if policy == "Forbid" and active:
            # There is a small risk of running two at once anyway: the active list may not
            # show a Job created moments ago (the status write not yet seen).
            _log.debug(
                "not starting job because prior execution is still running and concurrency "
                "policy is Forbid",
                cronjob=_key(cron_job),
            )
            self._recorder.event(
                cron_job,
                EVENT_TYPE_NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy "
                "is Forbid",
            )
            return self._requeue_after(cron_job, now, schedule)
        if policy == "Replace":
            for ref in active:
                _log.debug(
                    "deleting job that was still running at next scheduled start time",
                    job=f"{ref.get('namespace')}/{ref.get('name')}",
                )
                try:
                    running = await self._client.get(
                        JOBS, str(ref.get("name")), namespace=str(ref.get("namespace", ""))
                    )
                except Exception as error:
                    self._recorder.eventf(
                        cron_job, EVENT_TYPE_WARNING, "FailedGet", "Get job: %s",
                        error_message(error),
                    )  # fmt: skip
                    raise
                if not await self._delete_job(cron_job, running):
                    raise RuntimeError(f"could not replace job {_key(running)}")
                outcome.update_status = True

        request = job_from_template(cron_job, scheduled_time)
        already_exists = False
        try:
            created = await self._client.create(JOBS, request, namespace=namespace)
        except AlreadyExists:
            # Created before by us (the status write that should have followed was lost) or
            # by someone else, who then keeps the status: ours only needs the active list.
            already_exists = True
            created = await self._client.get(
                JOBS, str(request["metadata"]["name"]), namespace=namespace
            )
            if not is_controlled_by(created, cron_job):
                return None
            if in_active_list(cron_job, str(_meta(created).get("uid", ""))):
                return None
        except Exception as error:
            if not is_namespace_terminating(error):
                self._recorder.eventf(
                    cron_job,
                    EVENT_TYPE_WARNING,
                    "FailedCreate",
                    "Error creating job: %s",
                    error_message(error),
                )
            raise

        if already_exists:
            _log.info("job already exists", cronjob=_key(cron_job), job=_key(request))
        else:
            created_at = parse_time(_meta(created).get("creationTimestamp"))
            if created_at is not None:
                self._metrics.observe_creation_skew((created_at - scheduled_time).total_seconds())
            _log.debug("created job", job=_key(created), cronjob=_key(cron_job))
            self._recorder.eventf(
                cron_job,
                EVENT_TYPE_NORMAL,
                "SuccessfulCreate",
                "Created job %s",
                _meta(created).get("name"),
            )

        # From here to the status write, a crash leaves a Job that is not in the active list:
        # the next sync sees it (UnexpectedJob), and its name keeps the activation from
        # running twice.
        status = cron_job.setdefault("status", {})
        status["active"] = [*(status.get("active") or []), job_reference(created)]
        status["lastScheduleTime"] = format_rfc3339(scheduled_time, UTC)
        outcome.update_status = True
        return self._requeue_after(cron_job, now, schedule)

    @staticmethod
    def _requeue_after(
        cron_job: Mapping[str, Any], now: datetime, schedule: NextActivation
    ) -> float | None:
        delay = next_schedule_time_duration(cron_job, now, schedule)
        return None if delay is None else delay.total_seconds()
