"""The conditions in a workload's ``status`` (Deployment, ReplicaSet, Job), read and replaced
as kube-controller-manager does.

Upstream keeps one copy of these per workload (``GetDeploymentCondition`` /
``SetDeploymentCondition`` / ``RemoveDeploymentCondition`` in the deployment util,
``GetCondition`` / ``SetCondition`` / ``RemoveCondition`` in the ReplicaSet controller); this is
that pattern once, over the status dict, which the caller owns (a copy, like upstream's pointer
arguments).

These are not ``metav1.Condition``'s rules
(:func:`kcontrol.controllerutil.set_status_condition`, which updates the condition in place
field by field): a set *replaces* the condition of its type, whole, and moves it last - unless
one of that type already has the same status and reason, which leaves the status untouched,
message and times included. What differs per controller stays with it: the Deployment keeps
the old ``lastTransitionTime`` when only the reason changes
(``kcontrol_controllers.deployment._conditions.set_condition``), and the Job's
``ensureJobConditionStatus`` resets its times on any change
(``kcontrol_controllers.job._conditions.ensure_condition_status``).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kcontrol.controllerutil import find_status_condition

__all__ = ["get_condition", "remove_condition", "set_condition"]


def get_condition(status: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    """The first condition of ``condition_type`` in ``status["conditions"]``, or ``None``."""
    found: dict[str, Any] | None = find_status_condition(
        status.get("conditions") or (), condition_type
    )
    return found


def set_condition(status: MutableMapping[str, Any], condition: Mapping[str, Any]) -> None:
    """Put a copy of ``condition`` last in ``status["conditions"]``, in place of the one of its
    type; nothing changes if a condition of the type has the same status and reason already.
    """
    current = get_condition(status, condition["type"])
    if (
        current is not None
        and current.get("status") == condition.get("status")
        and current.get("reason") == condition.get("reason")
    ):
        return
    kept = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    status["conditions"] = [*kept, dict(condition)]


def remove_condition(status: MutableMapping[str, Any], condition_type: str) -> None:
    """Drop the conditions of ``condition_type`` from ``status``; the key goes away with the
    last condition, as Go omits an empty list."""
    kept = [c for c in status.get("conditions") or () if c.get("type") != condition_type]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)
