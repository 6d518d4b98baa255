"""Whether and how a Job finished, as the controllers that watch Jobs read it.

Upstream's ``pkg/controller/job/util`` (``FinishedCondition``, ``IsJobFinished``,
``IsJobSucceeded``), which the Job, CronJob and TTL-after-finished controllers share. A Job
has finished once it carries a ``Complete`` or ``Failed`` condition that is ``True``; the
interim ``SuccessCriteriaMet`` and ``FailureTarget`` do not count. Jobs are plain dicts;
nothing here mutates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "JOB_COMPLETE",
    "JOB_FAILED",
    "finished_condition",
    "finished_condition_type",
    "is_job_finished",
    "is_job_succeeded",
]

JOB_COMPLETE: Final = "Complete"
"""``batch.JobComplete``: the condition type of a Job that succeeded."""
JOB_FAILED: Final = "Failed"
"""``batch.JobFailed``: the condition type of a Job that failed."""


def _conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((job.get("status") or {}).get("conditions") or ())


def _is_true(condition: Mapping[str, Any], *types: str) -> bool:
    return condition.get("type") in types and condition.get("status") == "True"


def finished_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The condition that says the Job finished: its first ``Complete`` or ``Failed``
    condition that is ``True``; ``None`` while it runs."""
    for condition in _conditions(job):
        if _is_true(condition, JOB_COMPLETE, JOB_FAILED):
            return condition
    return None


def finished_condition_type(job: Mapping[str, Any]) -> str | None:
    """The type of :func:`finished_condition` (upstream ``FinishedCondition``): ``Complete``,
    ``Failed``, or ``None`` while the Job runs."""
    condition = finished_condition(job)
    return None if condition is None else str(condition.get("type"))


def is_job_finished(job: Mapping[str, Any]) -> bool:
    """True once the Job completed or failed (upstream ``IsJobFinished``)."""
    return finished_condition(job) is not None


def is_job_succeeded(job: Mapping[str, Any]) -> bool:
    """True when the Job has a ``Complete`` condition that is ``True`` (upstream
    ``IsJobSucceeded``), whatever comes before it."""
    return any(_is_true(condition, JOB_COMPLETE) for condition in _conditions(job))
