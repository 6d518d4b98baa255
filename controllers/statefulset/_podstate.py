"""The states of a member pod the StatefulSet controller branches on.

A pod is *created* once the API server has given it a phase (a pod the controller built but
has not created yet has none), *terminating* once it has a deletion timestamp, *healthy*
when it is running, ready and not terminating, and *available* when it has been ready for
``spec.minReadySeconds`` (:func:`get_min_ready_seconds`). A pod that is not healthy or not
available is *unavailable*: what blocks an ``OrderedReady`` set and what a rolling update's
``maxUnavailable`` counts.

Each predicate reads a pod as the API server sends it and never modifies it; time is
``now``, passed in. Upstream's ``isRunningAndReady``, ``isRunningAndAvailable``,
``isCreated``, ``isPending``, ``isFailed``, ``isSucceeded``, ``isTerminating``,
``isHealthy``, ``isUnavailable`` and the set's ``spec.minReadySeconds``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..podutil import is_pod_available, is_pod_ready
from ._fields import meta, spec, status

__all__ = [
    "get_min_ready_seconds",
    "is_created",
    "is_failed",
    "is_healthy",
    "is_pending",
    "is_running_and_available",
    "is_running_and_ready",
    "is_succeeded",
    "is_terminating",
    "is_unavailable",
]


def _phase(pod: Mapping[str, Any]) -> str:
    return str(status(pod).get("phase") or "")


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    """True for a ``Running`` pod whose ``Ready`` condition is ``True``."""
    return _phase(pod) == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """True for a pod that has been ready for ``min_ready_seconds`` at ``now`` (any ready
    pod when it is 0). As upstream, despite the name, the phase is not looked at: callers
    check :func:`is_running_and_ready` first."""
    return is_pod_available(pod, min_ready_seconds, now)


def is_created(pod: Mapping[str, Any]) -> bool:
    """True once the API server has given the pod a phase."""
    return _phase(pod) != ""


def is_pending(pod: Mapping[str, Any]) -> bool:
    """True for a ``Pending`` pod (its missing claims are created again, in case)."""
    return _phase(pod) == "Pending"


def is_failed(pod: Mapping[str, Any]) -> bool:
    """True for a ``Failed`` pod: it is deleted and made again."""
    return _phase(pod) == "Failed"


def is_succeeded(pod: Mapping[str, Any]) -> bool:
    """True for a ``Succeeded`` pod: it is deleted and made again, as a failed one (a pod
    stopped by its node can end either way)."""
    return _phase(pod) == "Succeeded"


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """True once the pod has a deletion timestamp, whatever its phase."""
    return meta(pod).get("deletionTimestamp") is not None


def is_healthy(pod: Mapping[str, Any]) -> bool:
    """True for a running, ready pod that is not terminating."""
    return is_running_and_ready(pod) and not is_terminating(pod)


def is_unavailable(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """True for a pod that is not healthy, or not yet ready for ``min_ready_seconds``."""
    return not is_healthy(pod) or not is_running_and_available(pod, min_ready_seconds, now)


def get_min_ready_seconds(set_: Mapping[str, Any]) -> int:
    """``spec.minReadySeconds``, 0 when unset: how long a ready pod waits before it counts
    as available."""
    return int(spec(set_).get("minReadySeconds") or 0)
