"""A Job's conditions: their types, upstream's reasons and messages, and the pure helpers
that read and set them.

A Job ends in two steps. When the controller decides it failed it first writes the interim
``FailureTarget`` condition (or ``SuccessCriteriaMet`` when it succeeded), deletes what still
runs, counts every pod, and only once no pod is left uncounted or terminating does it write
the terminal ``Failed`` (or ``Complete``) condition with the same reason and message. The API
server enforces that order, and another controller reading the interim condition knows the
outcome early. ``Suspended`` is ``True`` while the Job is suspended and turns ``False`` on
resume.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSequence
from datetime import datetime
from typing import Any, Final

from kcontrol.metatime import format_time

from ..conditions import get_condition
from ._spec import status

__all__ = [
    "BACKOFF_LIMIT_EXCEEDED",
    "BACKOFF_LIMIT_EXCEEDED_MESSAGE",
    "COMPLETE",
    "COMPLETIONS_REACHED",
    "COMPLETIONS_REACHED_MESSAGE",
    "DEADLINE_EXCEEDED",
    "DEADLINE_EXCEEDED_MESSAGE",
    "FAILED",
    "FAILED_INDEXES",
    "FAILED_INDEXES_MESSAGE",
    "FAILURE_TARGET",
    "MAX_FAILED_INDEXES_EXCEEDED",
    "MAX_FAILED_INDEXES_EXCEEDED_MESSAGE",
    "POD_FAILURE_POLICY",
    "SUCCESS_CRITERIA_MET",
    "SUCCESS_POLICY",
    "SUSPENDED",
    "ensure_condition_status",
    "is_success_criteria_met",
    "new_condition",
    "success_criteria_met_condition",
]

# Condition types.
SUSPENDED: Final = "Suspended"
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

# Reasons, with the messages the controller writes next to them.
POD_FAILURE_POLICY: Final = "PodFailurePolicy"
BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
BACKOFF_LIMIT_EXCEEDED_MESSAGE: Final = "Job has reached the specified backoff limit"
DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
DEADLINE_EXCEEDED_MESSAGE: Final = "Job was active longer than specified deadline"
MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
MAX_FAILED_INDEXES_EXCEEDED_MESSAGE: Final = (
    "Job has exceeded the specified maximal number of failed indexes"
)
FAILED_INDEXES: Final = "FailedIndexes"
FAILED_INDEXES_MESSAGE: Final = "Job has failed indexes"
SUCCESS_POLICY: Final = "SuccessPolicy"
COMPLETIONS_REACHED: Final = "CompletionsReached"
COMPLETIONS_REACHED_MESSAGE: Final = "Reached expected number of succeeded pods"


def new_condition(
    condition_type: str, condition_status: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """A condition probed and transitioned at ``now`` (empty reason and message left out, as
    Go omits them)."""
    stamp = format_time(now)
    condition: dict[str, Any] = {
        "type": condition_type,
        "status": condition_status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def ensure_condition_status(
    conditions: MutableSequence[dict[str, Any]],
    condition_type: str,
    condition_status: str,
    reason: str,
    message: str,
    *,
    now: datetime,
) -> bool:
    """Make the condition of ``condition_type`` say ``condition_status`` with ``reason`` and
    ``message`` (replacing it, timestamps included, when any of them differs); a ``False``
    condition is never added where there was none. Returns whether ``conditions`` changed."""
    for position, condition in enumerate(conditions):
        if condition.get("type") != condition_type:
            continue
        if (
            condition.get("status") != condition_status
            or (condition.get("reason") or "") != reason
            or (condition.get("message") or "") != message
        ):
            conditions[position] = new_condition(
                condition_type, condition_status, reason, message, now
            )
            return True
        return False
    if condition_status != "False":
        conditions.append(new_condition(condition_type, condition_status, reason, message, now))
        return True
    return False


def success_criteria_met_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Job's ``SuccessCriteriaMet`` condition if it is ``True`` (upstream reads only the
    first of the type)."""
    condition = get_condition(status(job), SUCCESS_CRITERIA_MET)
    return condition if condition is not None and condition.get("status") == "True" else None


def is_success_criteria_met(condition: Mapping[str, Any] | None) -> bool:
    """Whether ``condition`` is ``SuccessCriteriaMet=True``."""
    return (
        condition is not None
        and condition.get("type") == SUCCESS_CRITERIA_MET
        and condition.get("status") == "True"
    )
