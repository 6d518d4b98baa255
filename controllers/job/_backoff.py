"""The pod-recreation backoff: after pods fail, replacements wait 10 s, doubling with each
further failure, capped at 10 minutes. A port of ``backoff_utils.go``.

Failures are counted as upstream counts them: per Job, the failures *since the last success*
(a success resets the count; a failure that finished before it does not count), and the time
of the last such failure. The controller keeps one :class:`BackoffRecord` per Job in a
:class:`BackoffStore` (memory only: a restarted controller starts without backoff, as
kube-controller-manager does). With ``backoffLimitPerIndex`` each index backs off on its own,
from the failure-count annotations of its last failed pod (:func:`remaining_time_per_index`).

Times are aware :class:`~datetime.datetime` values, durations float seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from ._indexed import index_absolute_failure_count
from ._pods import finished_time

__all__ = [
    "DEFAULT_POD_FAILURE_BACKOFF",
    "MAX_POD_FAILURE_BACKOFF",
    "BackoffRecord",
    "BackoffStore",
    "remaining_time_for_failures",
    "remaining_time_per_index",
]

DEFAULT_POD_FAILURE_BACKOFF: Final = 10.0
"""Seconds a replacement waits after the first failure (upstream
``DefaultJobPodFailureBackOff``)."""
MAX_POD_FAILURE_BACKOFF: Final = 600.0
"""The cap of the doubling (``MaxJobPodFailureBackOff``)."""


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    """A Job's failures since its last success, and when the last of them finished."""

    key: str
    failures_after_last_success: int = 0
    last_failure_time: datetime | None = None

    def remaining_time(
        self,
        now: datetime,
        default_backoff: float = DEFAULT_POD_FAILURE_BACKOFF,
        max_backoff: float = MAX_POD_FAILURE_BACKOFF,
    ) -> float:
        """Seconds from ``now`` until replacements may be created (0: at once)."""
        return remaining_time_for_failures(
            now,
            default_backoff,
            max_backoff,
            self.failures_after_last_success,
            self.last_failure_time,
        )


def remaining_time_for_failures(
    now: datetime,
    default_backoff: float,
    max_backoff: float,
    failures: int,
    last_failure_time: datetime | None,
) -> float:
    """Seconds from ``now`` until ``default_backoff * 2**(failures - 1)`` (capped at
    ``max_backoff``) have passed since ``last_failure_time``; 0 without failures."""
    if failures == 0 or last_failure_time is None:
        return 0.0
    backoff = default_backoff
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= max_backoff:
            backoff = max_backoff
            break
    elapsed = (now - last_failure_time).total_seconds()
    if backoff < elapsed:
        return 0.0
    return backoff - elapsed


def remaining_time_per_index(
    now: datetime,
    last_failed_pod: Mapping[str, Any] | None,
    default_backoff: float = DEFAULT_POD_FAILURE_BACKOFF,
    max_backoff: float = MAX_POD_FAILURE_BACKOFF,
) -> float:
    """Seconds until the index of ``last_failed_pod`` (its last failed pod; ``None``: no
    failure) may get a replacement: the failures are the pod's failure-count annotations
    (counted and ignored) plus its own failure."""
    if last_failed_pod is None:
        return 0.0
    failures = index_absolute_failure_count(last_failed_pod) + 1
    return remaining_time_for_failures(
        now, default_backoff, max_backoff, failures, finished_time(last_failed_pod)
    )


class BackoffStore:
    """The :class:`BackoffRecord` of every Job, by key."""

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def get(self, key: str) -> BackoffRecord | None:
        return self._records.get(key)

    def update(self, record: BackoffRecord) -> None:
        """Store ``record`` (replacing the Job's previous one)."""
        self._records[record.key] = record

    def remove(self, key: str) -> None:
        """Forget the Job's record (it finished, or is gone)."""
        self._records.pop(key, None)

    def new_record(
        self,
        key: str,
        new_succeeded_pods: Sequence[Mapping[str, Any]],
        new_failed_pods: Sequence[Mapping[str, Any]],
    ) -> BackoffRecord:
        """The record after the pods that finished since the last sync (not stored: the
        caller stores it once the status recording them is written).

        No success: every new failure adds to the count, the latest is the last failure.
        A success resets the count to the failures that finished after the latest success.
        """
        old = self._records.get(key)
        record = old if old is not None else BackoffRecord(key)
        succeeded = sorted(finished_time(pod) for pod in new_succeeded_pods)
        failed = sorted(finished_time(pod) for pod in new_failed_pods)
        if not succeeded:
            if not failed:
                return record
            return replace(
                record,
                failures_after_last_success=record.failures_after_last_success + len(failed),
                last_failure_time=failed[-1],
            )
        last_success = succeeded[-1]
        after = [moment for moment in failed if moment > last_success]
        return BackoffRecord(key, len(after), after[-1] if after else None)
