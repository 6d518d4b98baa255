"""Reading a Job as the Job controller interprets it: the names it shares with the rest of
Kubernetes, and its spec with the API's defaults.

Jobs are plain dicts as the API server sent them. The server defaults ``parallelism``,
``backoffLimit``, ``completionMode``, ``suspend`` and ``podReplacementPolicy``; when an object
omits one (a test's, say) it reads here as the server would have set it. Optional pointers
(``completions``, ``activeDeadlineSeconds``, ``backoffLimitPerIndex``...) read as ``None``.
Nothing here mutates its argument.

Behaviour is Kubernetes 1.36's, where every Job feature the controller reads is on:
``JobPodReplacementPolicy``, ``JobManagedBy``, ``JobSuccessPolicy`` and
``JobBackoffLimitPerIndex`` are GA (the alpha ``WorkloadWithJob`` is out of scope).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "API_VERSION",
    "COMPLETION_INDEX_ANNOTATION",
    "CONTROLLER_KIND",
    "DEFAULT_BACKOFF_LIMIT",
    "INDEXED",
    "INDEX_FAILURE_COUNT_ANNOTATION",
    "INDEX_IGNORED_FAILURE_COUNT_ANNOTATION",
    "JOB_CONTROLLER_NAME",
    "JOB_TRACKING_FINALIZER",
    "KIND",
    "NON_INDEXED",
    "active_deadline_seconds",
    "backoff_limit",
    "backoff_limit_per_index",
    "completion_mode",
    "completions",
    "has_backoff_limit_per_index",
    "is_indexed",
    "managed_by_external_controller",
    "max_failed_indexes",
    "meta",
    "only_replace_failed_pods",
    "parallelism",
    "pod_failure_policy",
    "spec",
    "status",
    "success_policy",
    "suspended",
]

API_VERSION: Final = "batch/v1"
KIND: Final = "Job"
CONTROLLER_KIND: Final = (API_VERSION, KIND)
"""``(apiVersion, kind)`` of the controller references on a Job's pods."""

JOB_CONTROLLER_NAME: Final = "kubernetes.io/job-controller"
"""The ``spec.managedBy`` value that names this controller (as a missing field does)."""

JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
"""The finalizer every pod of a Job carries until the controller has counted it."""

COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
"""The completion index of a pod of an Indexed Job (annotation, and label of the same name)."""
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
"""How many pods of the index failed before this one (with ``backoffLimitPerIndex``)."""
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = (
    "batch.kubernetes.io/job-index-ignored-failure-count"
)
"""How many of those failures a pod failure policy ``Ignore`` rule did not count."""

NON_INDEXED: Final = "NonIndexed"
INDEXED: Final = "Indexed"

DEFAULT_BACKOFF_LIMIT: Final = 6
_MAX_INT32: Final = 2**31 - 1


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata``, or an empty mapping."""
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec``, or an empty mapping."""
    value = job.get("spec")
    return value if isinstance(value, Mapping) else {}


def status(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """``status``, or an empty mapping."""
    value = job.get("status")
    return value if isinstance(value, Mapping) else {}


def _optional_int(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def completions(job: Mapping[str, Any]) -> int | None:
    """``spec.completions``; ``None`` for a work-queue Job (any success completes it)."""
    return _optional_int(spec(job).get("completions"))


def parallelism(job: Mapping[str, Any]) -> int:
    """``spec.parallelism`` (default 1)."""
    value = _optional_int(spec(job).get("parallelism"))
    return 1 if value is None else value


def backoff_limit(job: Mapping[str, Any]) -> int:
    """``spec.backoffLimit``: 6 by default, the int32 maximum when ``backoffLimitPerIndex``
    is set (as the API server defaults it)."""
    value = _optional_int(spec(job).get("backoffLimit"))
    if value is not None:
        return value
    return _MAX_INT32 if backoff_limit_per_index(job) is not None else DEFAULT_BACKOFF_LIMIT


def backoff_limit_per_index(job: Mapping[str, Any]) -> int | None:
    """``spec.backoffLimitPerIndex`` (Indexed Jobs only)."""
    return _optional_int(spec(job).get("backoffLimitPerIndex"))


def has_backoff_limit_per_index(job: Mapping[str, Any]) -> bool:
    """Whether failures are limited per index rather than for the whole Job."""
    return backoff_limit_per_index(job) is not None


def max_failed_indexes(job: Mapping[str, Any]) -> int | None:
    """``spec.maxFailedIndexes``."""
    return _optional_int(spec(job).get("maxFailedIndexes"))


def active_deadline_seconds(job: Mapping[str, Any]) -> int | None:
    """``spec.activeDeadlineSeconds``."""
    return _optional_int(spec(job).get("activeDeadlineSeconds"))


def completion_mode(job: Mapping[str, Any]) -> str:
    """``spec.completionMode`` as written (``NonIndexed`` when absent); may be a mode this
    controller does not know, which it refuses to sync."""
    value = spec(job).get("completionMode")
    return value if isinstance(value, str) and value else NON_INDEXED


def is_indexed(job: Mapping[str, Any]) -> bool:
    """Whether the Job is ``Indexed``."""
    return completion_mode(job) == INDEXED


def suspended(job: Mapping[str, Any]) -> bool:
    """``spec.suspend``."""
    return spec(job).get("suspend") is True


def pod_failure_policy(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.podFailurePolicy``, or ``None``."""
    value = spec(job).get("podFailurePolicy")
    return value if isinstance(value, Mapping) else None


def success_policy(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.successPolicy``, or ``None``."""
    value = spec(job).get("successPolicy")
    return value if isinstance(value, Mapping) else None


def only_replace_failed_pods(job: Mapping[str, Any]) -> bool:
    """Whether replacement pods wait until the pods they replace are ``Failed`` rather than
    merely terminating: ``podReplacementPolicy: Failed``, or any pod failure policy (which
    needs the terminal phase to match its rules)."""
    if spec(job).get("podReplacementPolicy") == "Failed":
        return True
    return pod_failure_policy(job) is not None


def managed_by_external_controller(job: Mapping[str, Any]) -> str | None:
    """The ``spec.managedBy`` of a Job that another controller manages, else ``None``."""
    value = spec(job).get("managedBy")
    if isinstance(value, str) and value and value != JOB_CONTROLLER_NAME:
        return value
    return None
