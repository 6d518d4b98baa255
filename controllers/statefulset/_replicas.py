"""The decisions of a sync that need no API call: which pods are replicas and which are
condemned, what blocks an ``OrderedReady`` set, and which pods a rolling update replaces.

The first part of upstream's ``updateStatefulSet``, as functions:

1. :func:`split_by_ordinal` - the pods whose ordinal lies in ``[start, end]`` are the
   replicas, one slot per ordinal (an empty slot gets a new pod at the revision it should
   have); pods with a valid ordinal outside the range are condemned, highest ordinal first;
   pods without an ordinal are ignored.
2. :func:`first_unavailable` - the unavailable pods are counted, and the first one found
   (replicas in ordinal order, then condemned from the lowest ordinal) may be deleted on a
   scale down even though it is not healthy.
3. With ``podManagementPolicy: OrderedReady`` (:func:`allows_burst` false, "monotonic") a
   replica that is terminating, not running and ready, or not yet available stops the
   sync (:func:`replica_wait_reason`); a condemned pod is deleted only once every pod before
   it is healthy (:func:`condemned_step`). ``Parallel`` sets never wait.
4. A ``RollingUpdate`` deletes, from the highest ordinal down to the partition, pods not at
   the update revision, as long as fewer than ``maxUnavailable`` replicas are unavailable
   (:func:`rolling_update_deletions`, :func:`get_stateful_set_max_unavailable`; the
   MaxUnavailableStatefulSet path: beta but off by default in 1.36, so the controller
   asks only when its ``max_unavailable`` option is on).

Nothing here modifies its arguments; time is ``now``, passed in.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kcontrol.client import Object

from ..intstr import scaled_value_from_int_or_percent
from ._fields import pod_management_policy, update_strategy
from ._identity import (
    descending_ordinal,
    get_end_ordinal,
    get_ordinal,
    get_start_ordinal,
    pod_in_ordinal_range,
)
from ._names import PARALLEL
from ._pods import get_pod_revision, new_versioned_stateful_set_pod
from ._podstate import (
    get_min_ready_seconds,
    is_running_and_available,
    is_running_and_ready,
    is_terminating,
    is_unavailable,
)

__all__ = [
    "CondemnedStep",
    "OrdinalSplit",
    "allows_burst",
    "condemned_step",
    "first_unavailable",
    "get_stateful_set_max_unavailable",
    "replica_wait_reason",
    "rolling_update_deletions",
    "split_by_ordinal",
]


def allows_burst(set_: Mapping[str, Any]) -> bool:
    """True for ``podManagementPolicy: Parallel``: pods are created and deleted all at once,
    without waiting for each other."""
    return pod_management_policy(set_) == PARALLEL


# -- replicas and condemned pods ---------------------------------------------------------------


@dataclass(frozen=True)
class OrdinalSplit:
    """The set's pods by ordinal: ``replicas[i]`` is the pod with ordinal ``start + i`` (one
    per ordinal of the range; built, not created, where none existed) and ``condemned`` the
    pods beyond the range, highest ordinal first."""

    replicas: list[Object]
    condemned: list[Object]


def split_by_ordinal(
    set_: Mapping[str, Any],
    pods: Sequence[Object],
    *,
    current_set: Mapping[str, Any],
    update_set: Mapping[str, Any],
    current_revision: str,
    update_revision: str,
) -> OrdinalSplit:
    """``pods`` split into replicas and condemned pods (step 1 above). An ordinal without a
    pod gets :func:`~._pods.new_versioned_stateful_set_pod` of ``current_set`` /
    ``update_set`` (the set at its current and update revisions). Of two pods with the same
    ordinal (``web-1`` and ``web-01``), the later in ``pods`` is the replica, as upstream.
    The pods are the caller's objects, not copies."""
    start, end = get_start_ordinal(set_), get_end_ordinal(set_)
    slots: list[Object | None] = [None] * max(end - start + 1, 0)
    condemned: list[Object] = []
    for pod in pods:
        ordinal = get_ordinal(pod)
        if pod_in_ordinal_range(pod, set_):
            slots[ordinal - start] = pod
        elif ordinal >= 0:
            condemned.append(pod)
    replicas = [
        pod
        if pod is not None
        else new_versioned_stateful_set_pod(
            current_set, update_set, current_revision, update_revision, start + index
        )
        for index, pod in enumerate(slots)
    ]
    return OrdinalSplit(replicas, descending_ordinal(condemned))


def first_unavailable(
    split: OrdinalSplit, min_ready_seconds: int, now: datetime
) -> tuple[int, Object | None]:
    """How many of the split's pods are unavailable, and the first of them: the lowest
    unavailable replica, else the lowest unavailable condemned pod."""
    count, first = 0, None
    for pod in [*split.replicas, *reversed(split.condemned)]:
        if is_unavailable(pod, min_ready_seconds, now):
            count += 1
            if first is None:
                first = pod
    return count, first


# -- OrderedReady ------------------------------------------------------------------------------


def replica_wait_reason(
    pod: Mapping[str, Any], min_ready_seconds: int, now: datetime
) -> str | None:
    """Why an ``OrderedReady`` set must wait for the created replica ``pod`` before going
    on - it is terminating, not running and ready, or not yet available (the end of
    upstream's "StatefulSet is waiting for Pod to ..." messages) - or ``None``. A
    ``Parallel`` set does not ask."""
    if is_terminating(pod):
        return "Terminate"
    if not is_running_and_ready(pod):
        return "be Running and Ready"
    if not is_running_and_available(pod, min_ready_seconds, now):
        return "be Available"
    return None


class CondemnedStep(enum.Enum):
    """What a sync does with a condemned pod."""

    WAIT = "wait"
    """Stop here: an ``OrderedReady`` set waits for this pod (terminating) or for the first
    unavailable pod before deleting more."""
    SKIP = "skip"
    """Go on to the next pod: a ``Parallel`` set does not wait for a terminating pod."""
    DELETE = "delete"
    """Delete the pod (then an ``OrderedReady`` set stops until the next sync)."""


def condemned_step(
    pod: Mapping[str, Any],
    first_unavailable_pod: Mapping[str, Any] | None,
    *,
    monotonic: bool,
    min_ready_seconds: int,
    now: datetime,
) -> CondemnedStep:
    """The step for condemned ``pod`` (upstream ``processCondemned``): a terminating pod is
    waited for (``OrderedReady``) or skipped (``Parallel``); an ``OrderedReady`` set deletes
    an unhealthy pod only if it is the first unavailable pod (compared by identity), and
    waits otherwise; anything else is deleted."""
    if is_terminating(pod):
        return CondemnedStep.WAIT if monotonic else CondemnedStep.SKIP
    if monotonic and pod is not first_unavailable_pod:
        if not is_running_and_ready(pod):
            return CondemnedStep.WAIT
        if not is_running_and_available(pod, min_ready_seconds, now):
            return CondemnedStep.WAIT
    return CondemnedStep.DELETE


# -- rolling updates ---------------------------------------------------------------------------


def get_stateful_set_max_unavailable(max_unavailable: int | str | None, replica_count: int) -> int:
    """How many replicas a rolling update may have unavailable: ``maxUnavailable`` (1 when
    unset), a percentage of ``replica_count`` rounded down, and never less than 1. Raises
    :class:`IntOrPercentError` for a malformed value (validation refuses those)."""
    value = scaled_value_from_int_or_percent(
        1 if max_unavailable is None else max_unavailable, replica_count, round_up=False
    )
    return max(value, 1)


def rolling_update_deletions(
    set_: Mapping[str, Any],
    replicas: Sequence[Mapping[str, Any]],
    update_revision: str,
    now: datetime,
) -> list[int]:
    """The indices into ``replicas`` (:attr:`OrdinalSplit.replicas`) whose pods a
    ``RollingUpdate`` deletes now, highest ordinal first.

    The budget is ``maxUnavailable`` (:func:`get_stateful_set_max_unavailable` of
    ``spec.replicas``; 1 without a ``rollingUpdate`` block) minus the replicas unavailable
    already, anywhere in the range; within it, the pods at index ``partition`` and above
    that are not at ``update_revision`` and not terminating are taken from the top. The
    caller handles ``OnDelete`` (no deletions) before asking.
    """
    rolling_update = update_strategy(set_).get("rollingUpdate")
    update_min, max_unavailable = 0, 1
    if rolling_update is not None:
        update_min = int(rolling_update.get("partition") or 0)
        max_unavailable = get_stateful_set_max_unavailable(
            rolling_update.get("maxUnavailable"), len(replicas)
        )
    min_ready_seconds = get_min_ready_seconds(set_)
    unavailable = sum(1 for pod in replicas if is_unavailable(pod, min_ready_seconds, now))
    budget = max_unavailable - unavailable
    deletions: list[int] = []
    for index in range(len(replicas) - 1, update_min - 1, -1):
        if len(deletions) >= budget:
            break
        pod = replicas[index]
        if get_pod_revision(pod) != update_revision and not is_terminating(pod):
            deletions.append(index)
    return deletions
