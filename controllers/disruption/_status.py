"""A PodDisruptionBudget's status, computed from its pods: pure functions over plain dicts.

- :func:`build_disrupted_pod_map`: upstream's ``buildDisruptedPodMap`` - the entries of
  ``status.disruptedPods`` to keep (pods the eviction API let go, not yet seen terminating,
  within :data:`~._names.DELETION_TIMEOUT`), those that expired, and when the next one will;
- :func:`count_healthy_pods`: ready pods, minus those being deleted and those kept in
  ``disruptedPods``;
- :func:`disruptions_allowed`: ``currentHealthy - desiredHealthy``, never below 0, and 0
  while ``expectedPods`` is 0 (a PDB whose pods have not shown up yet is safe when they do);
- :func:`new_status` and :func:`status_is_current`: the status to write and whether the
  stored one already is it (upstream's comparison in ``updatePdbStatus``, with
  ``ConditionsAreUpToDate`` of ``component-helpers``);
- :func:`set_disruption_allowed` and :func:`set_sync_failed`: the ``DisruptionAllowed``
  condition, ``SufficientPods``/``InsufficientPods`` from the numbers or ``SyncFailed`` with
  an error, set with ``metav1.Condition``'s rules (the transition time moves only when the
  status does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kcontrol.client import Object
from kcontrol.controllerutil import find_status_condition, set_status_condition
from kcontrol.metatime import parse_time

from ..podutil import is_pod_ready
from ._names import (
    DELETION_TIMEOUT,
    DISRUPTION_ALLOWED,
    INSUFFICIENT_PODS,
    SUFFICIENT_PODS,
    SYNC_FAILED,
)

__all__ = [
    "DisruptedPods",
    "PdbCounts",
    "build_disrupted_pod_map",
    "conditions_are_up_to_date",
    "count_healthy_pods",
    "disruptions_allowed",
    "new_status",
    "set_disruption_allowed",
    "set_sync_failed",
    "status_is_current",
]

_TIMEOUT = timedelta(seconds=DELETION_TIMEOUT)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _deleting(pod: Mapping[str, Any]) -> bool:
    return _meta(pod).get("deletionTimestamp") is not None


@dataclass(frozen=True, slots=True)
class DisruptedPods:
    """What :func:`build_disrupted_pod_map` found.

    ``kept``: the entries to write back (pod name -> the eviction's time, as stored);
    ``expired``: the pods whose entry is older than the deletion timeout while they are
    not being deleted (upstream records a ``NotDeleted`` warning on each); ``recheck_at``:
    when the first kept entry expires (``None`` if none is kept).
    """

    kept: dict[str, str] = field(default_factory=dict)
    expired: list[Object] = field(default_factory=list)
    recheck_at: datetime | None = None


def build_disrupted_pod_map(
    pods: Iterable[Object], disrupted: Mapping[str, str] | None, now: datetime
) -> DisruptedPods:
    """Keep the ``disrupted`` entries of pods that still exist, are not being deleted, and
    were evicted at most :data:`~._names.DELETION_TIMEOUT` ago; an entry whose time cannot
    be read counts as expired."""
    if not disrupted:
        return DisruptedPods()
    kept: dict[str, str] = {}
    expired: list[Object] = []
    recheck_at: datetime | None = None
    for pod in pods:
        if _deleting(pod):
            continue
        stamp = disrupted.get(str(_meta(pod).get("name")))
        if stamp is None:
            continue
        evicted = parse_time(stamp)
        expected_deletion = None if evicted is None else evicted + _TIMEOUT
        if expected_deletion is None or expected_deletion < now:
            expired.append(pod)
            continue
        kept[str(_meta(pod).get("name"))] = stamp
        if recheck_at is None or expected_deletion < recheck_at:
            recheck_at = expected_deletion
    return DisruptedPods(kept, expired, recheck_at)


def count_healthy_pods(pods: Iterable[Object], disrupted: Mapping[str, str], now: datetime) -> int:
    """Ready pods that are neither being deleted nor in ``disrupted`` with an entry that
    has not expired (upstream's ``countHealthyPods``)."""
    healthy = 0
    for pod in pods:
        if _deleting(pod):
            continue
        stamp = disrupted.get(str(_meta(pod).get("name")))
        evicted = None if stamp is None else parse_time(stamp)
        if evicted is not None and evicted + _TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected_pods: int) -> int:
    """How many more pods may be disrupted now."""
    allowed = current_healthy - desired_healthy
    return 0 if expected_pods <= 0 or allowed <= 0 else allowed


@dataclass(frozen=True, slots=True)
class PdbCounts:
    """The numbers of a PDB's status, as one sync computed them."""

    current_healthy: int
    desired_healthy: int
    expected_pods: int
    disrupted_pods: Mapping[str, str]

    @property
    def disruptions_allowed(self) -> int:
        return disruptions_allowed(self.current_healthy, self.desired_healthy, self.expected_pods)


def conditions_are_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """``component-helpers``' ``ConditionsAreUpToDate``: the ``DisruptionAllowed``
    condition exists, the status observed the current generation, and the condition agrees
    with ``disruptionsAllowed`` (True/``SufficientPods`` when > 0, else
    False/``InsufficientPods``)."""
    status = pdb.get("status") or {}
    condition = find_status_condition(status.get("conditions") or (), DISRUPTION_ALLOWED)
    if condition is None:
        return False
    if (status.get("observedGeneration") or 0) != (_meta(pdb).get("generation") or 0):
        return False
    if (status.get("disruptionsAllowed") or 0) > 0:
        wanted = ("True", SUFFICIENT_PODS)
    else:
        wanted = ("False", INSUFFICIENT_PODS)
    return (condition.get("status"), condition.get("reason")) == wanted


def status_is_current(pdb: Mapping[str, Any], counts: PdbCounts) -> bool:
    """Whether the stored status already holds ``counts`` (``disruptedPods`` absent and
    empty are the same) for the current generation, with an up-to-date condition."""
    status = pdb.get("status") or {}
    return (
        (status.get("currentHealthy") or 0) == counts.current_healthy
        and (status.get("desiredHealthy") or 0) == counts.desired_healthy
        and (status.get("expectedPods") or 0) == counts.expected_pods
        and (status.get("disruptionsAllowed") or 0) == counts.disruptions_allowed
        and dict(status.get("disruptedPods") or {}) == dict(counts.disrupted_pods)
        and conditions_are_up_to_date(pdb)
    )


def new_status(pdb: Mapping[str, Any], counts: PdbCounts, now: datetime) -> dict[str, Any]:
    """The status to write: ``counts``, ``observedGeneration`` set to the PDB's generation,
    the other conditions kept and ``DisruptionAllowed`` set from the numbers."""
    generation = _meta(pdb).get("generation") or 0
    old = pdb.get("status") or {}
    status: dict[str, Any] = {
        "currentHealthy": counts.current_healthy,
        "desiredHealthy": counts.desired_healthy,
        "expectedPods": counts.expected_pods,
        "disruptionsAllowed": counts.disruptions_allowed,
        "conditions": [dict(c) for c in old.get("conditions") or ()],
    }
    if counts.disrupted_pods:
        status["disruptedPods"] = dict(counts.disrupted_pods)
    if generation:
        status["observedGeneration"] = generation
    set_disruption_allowed(status, now)
    return status


def set_disruption_allowed(status: MutableMapping[str, Any], now: datetime) -> None:
    """``UpdateDisruptionAllowedCondition``: True/``SufficientPods`` when
    ``disruptionsAllowed > 0``, else False/``InsufficientPods``; no message; the
    condition's ``observedGeneration`` is the status's."""
    allowed = (status.get("disruptionsAllowed") or 0) > 0
    condition = {
        "type": DISRUPTION_ALLOWED,
        "status": "True" if allowed else "False",
        "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS,
        "observedGeneration": status.get("observedGeneration") or 0,
    }
    set_status_condition(status.setdefault("conditions", []), condition, now=now)


def set_sync_failed(status: MutableMapping[str, Any], error: str, now: datetime) -> None:
    """The fail-safe (upstream's ``failSafe``): ``disruptionsAllowed`` 0 and
    ``DisruptionAllowed`` False/``SyncFailed`` with ``error`` as its message; the other
    fields stay as stored."""
    status["disruptionsAllowed"] = 0
    condition = {
        "type": DISRUPTION_ALLOWED,
        "status": "False",
        "reason": SYNC_FAILED,
        "message": error,
        "observedGeneration": status.get("observedGeneration") or 0,
    }
    set_status_condition(status.setdefault("conditions", []), condition, now=now)
