"""The Jobs of a CronJob: upstream's ``getJobFromTemplate2``, ``getJobName``, the active-list
helpers and ``byJobStartTime`` (``utils.go``), and ``pkg/controller/job/util``'s finished
conditions - pure functions over plain dicts.

``status.active`` is a list of ``ObjectReference``s to the CronJob's running Jobs; the
helpers here change the CronJob they are given in place, as upstream's do on its copy.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from datetime import UTC, datetime, tzinfo
from typing import Any, Final

from kcontrol.client import JOBS, Object, deep_copy
from kcontrol.events import object_reference
from kcontrol.metatime import parse_time

from ..podutil import new_controller_ref
from ._times import load_location

__all__ = [
    "API_VERSION",
    "KIND",
    "SCHEDULED_TIMESTAMP_ANNOTATION",
    "by_job_start_time",
    "delete_from_active_list",
    "format_rfc3339",
    "in_active_list",
    "in_active_list_by_name",
    "job_from_template",
    "job_name",
    "job_reference",
    "time_hash_in_minutes",
]

API_VERSION: Final = "batch/v1"
KIND: Final = "CronJob"
"""The owner's ``apiVersion`` and ``kind`` in a Job's controller reference."""

SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""Set on each Job to the time it was scheduled for, RFC 3339 in the CronJob's time zone
(``batchv1.CronJobScheduledTimestampAnnotation``)."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _active(cron_job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((cron_job.get("status") or {}).get("active") or [])


# -- the active list ------------------------------------------------------------------------------


def in_active_list(cron_job: Mapping[str, Any], uid: str) -> bool:
    """Whether ``status.active`` references the Job with ``uid``."""
    return any(ref.get("uid") == uid for ref in _active(cron_job))


def in_active_list_by_name(cron_job: Mapping[str, Any], namespace: str, name: str) -> bool:
    """Whether ``status.active`` references a Job ``namespace/name`` (any UID)."""
    return any(
        ref.get("name") == name and ref.get("namespace") == namespace for ref in _active(cron_job)
    )


def delete_from_active_list(cron_job: MutableMapping[str, Any], uid: str) -> None:
    """Drop the references to the Job with ``uid`` from ``status.active`` (in place; an
    emptied list stays, empty, as upstream's)."""
    status = cron_job.setdefault("status", {})
    status["active"] = [ref for ref in _active(cron_job) if ref.get("uid") != uid]


def job_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ObjectReference`` to ``job`` kept in ``status.active`` (upstream ``getRef``):
    kind, namespace, name, uid, apiVersion and resourceVersion."""
    return object_reference(job, JOBS)


# -- new Jobs -------------------------------------------------------------------------------------


def time_hash_in_minutes(scheduled_time: datetime) -> int:
    """Unix time in minutes (upstream ``getTimeHashInMinutes``: ``Unix() / 60``, Go's integer
    division)."""
    seconds = int(scheduled_time.timestamp() // 1)
    minutes = abs(seconds) // 60
    return minutes if seconds >= 0 else -minutes


def job_name(cron_job: Mapping[str, Any], scheduled_time: datetime) -> str:
    """``<cronjob>-<scheduled time in minutes since the epoch>``: one name per activation, so
    that an activation is never run twice (the API server refuses a second create)."""
    return f"{_meta(cron_job).get('name')}-{time_hash_in_minutes(scheduled_time)}"


def format_rfc3339(moment: datetime, location: tzinfo) -> str:
    """Go's ``t.In(loc).Format(time.RFC3339)``: whole seconds, ``Z`` for a zero offset."""
    local = moment.astimezone(location)
    offset = local.utcoffset()
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}:{minutes:02d}"


def job_from_template(cron_job: Mapping[str, Any], scheduled_time: datetime) -> Object:
    """The Job to create for the activation at ``scheduled_time`` (upstream
    ``getJobFromTemplate2``): the template's labels and annotations, plus
    :data:`SCHEDULED_TIMESTAMP_ANNOTATION` in ``spec.timeZone`` (UTC when unset), the name
    from :func:`job_name`, the CronJob as controller, and a copy of the template's spec.
    ``creationTimestamp`` is the scheduled time, as upstream sends it (the API server sets its
    own). Raises :class:`~kcontrol_controllers.cronjob._times.UnknownTimeZone`."""
    spec = cron_job.get("spec") or {}
    template = spec.get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    location = load_location(str(spec.get("timeZone") or ""))
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339(scheduled_time, location)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(cron_job, scheduled_time),
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": annotations,
            "creationTimestamp": format_rfc3339(scheduled_time, UTC),
            "ownerReferences": [new_controller_ref(cron_job, API_VERSION, KIND)],
        },
        "spec": deep_copy(template.get("spec") or {}),
    }


def by_job_start_time(jobs: list[Object]) -> list[Object]:
    """``jobs`` sorted by ``status.startTime``, oldest first, the name breaking ties; Jobs
    not started yet last, by name (upstream ``byJobStartTime``)."""

    def key(job: Object) -> tuple[bool, datetime, str]:
        started = parse_time((job.get("status") or {}).get("startTime"))
        never = started is None
        return (never, started or datetime.min.replace(tzinfo=UTC), str(_meta(job).get("name")))

    return sorted(jobs, key=key)
