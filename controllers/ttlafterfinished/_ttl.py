"""When a finished Job expires: upstream's ``needsCleanup``, ``jobFinishTime``,
``getFinishAndExpireTime`` and ``timeLeft``, pure functions over the Job as a dict.

A Job is *finished* once it has a ``Complete`` or ``Failed`` condition with status ``True``
(``IsJobFinished`` of ``pkg/controller/job/util``); it *needs cleanup* when it is finished and
``spec.ttlSecondsAfterFinished`` is set (``0`` included: deleted as soon as it finishes). It
finished at that condition's ``lastTransitionTime`` - the first such condition, as upstream
reads them in order; ``status.completionTime`` is not consulted - and expires
``ttlSecondsAfterFinished`` seconds later. Times are aware UTC datetimes; a ``metav1.Time``
that is missing or unparseable counts as Go's zero time, which upstream refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kcontrol.metatime import parse_time

from ..jobutil import finished_condition, is_job_finished

__all__ = [
    "Expiry",
    "NotCleanable",
    "finish_and_expire_time",
    "job_finish_time",
    "needs_cleanup",
    "time_left",
    "ttl_seconds_after_finished",
]


class NotCleanable(ValueError):
    """The Job cannot be given an expiry time: it is not finished, has no TTL, or its finish
    time cannot be read. Upstream returns these as errors, and its worker retries the key
    rate-limited."""


@dataclass(frozen=True, slots=True)
class Expiry:
    """A finished Job's expiry as seen at ``since``: it finished at ``finish_at`` and expires
    at ``expire_at``."""

    finish_at: datetime
    expire_at: datetime
    since: datetime

    @property
    def remaining(self) -> float:
        """Seconds from ``since`` to ``expire_at``; zero or less once expired."""
        return (self.expire_at - self.since).total_seconds()

    @property
    def expired(self) -> bool:
        """True once the TTL ran out (upstream: ``*t <= 0``)."""
        return self.remaining <= 0

    @property
    def finished_in_the_future(self) -> bool:
        """The Job finished after ``since``: the clocks of the cluster disagree. Upstream logs
        it and the cleanup waits, as the longer ``remaining`` makes it."""
        return self.finish_at > self.since


def _meta(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("metadata") or {}


def _name(job: Mapping[str, Any]) -> str:
    meta = _meta(job)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def ttl_seconds_after_finished(job: Mapping[str, Any]) -> int | None:
    """``spec.ttlSecondsAfterFinished``, or ``None`` when it is not set."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    return None if ttl is None else int(ttl)


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """True when the Job is finished and has ``spec.ttlSecondsAfterFinished``."""
    return ttl_seconds_after_finished(job) is not None and is_job_finished(job)


def job_finish_time(job: Mapping[str, Any]) -> datetime:
    """The ``lastTransitionTime`` of the Job's first true ``Complete``/``Failed`` condition.

    Raises :class:`NotCleanable` when that time is missing (or unreadable), or when the Job
    has no such condition (never the case for a finished Job).
    """
    condition = finished_condition(job)
    if condition is None:
        raise NotCleanable(f"unable to find the status of the finished Job {_name(job)}")
    finish_at = parse_time(condition.get("lastTransitionTime"))
    if finish_at is None:
        raise NotCleanable(f"unable to find the time when the Job {_name(job)} finished")
    return finish_at


def finish_and_expire_time(job: Mapping[str, Any]) -> tuple[datetime, datetime]:
    """When the Job finished and when its TTL expires (finish time + TTL).

    Raises :class:`NotCleanable` for a Job that :func:`needs_cleanup` rejects, or whose finish
    time cannot be read.
    """
    ttl = ttl_seconds_after_finished(job)
    if ttl is None or not is_job_finished(job):
        raise NotCleanable(f"job {_name(job)} should not be cleaned up")
    finish_at = job_finish_time(job)
    return finish_at, finish_at + timedelta(seconds=ttl)


def time_left(job: Mapping[str, Any], since: datetime) -> Expiry:
    """The Job's :class:`Expiry` seen at ``since`` (an aware datetime): its ``remaining`` is
    ``expire_at - since`` in seconds, negative once expired. Raises :class:`NotCleanable` as
    :func:`finish_and_expire_time` does."""
    finish_at, expire_at = finish_and_expire_time(job)
    return Expiry(finish_at, expire_at, since)
