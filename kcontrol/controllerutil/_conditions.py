"""Status conditions (``metav1.Condition``) in a plain list of dicts.

apimachinery's ``pkg/api/meta/conditions.go``. A condition is a dict with ``type`` (unique in
the list), ``status`` (``"True"``, ``"False"`` or ``"Unknown"``), ``reason`` (a CamelCase
word), ``message``, ``lastTransitionTime`` (RFC 3339, whole seconds:
``2026-01-02T03:04:05Z``) and ``observedGeneration`` (the ``metadata.generation`` the
condition was computed from; left out when 0). ``lastTransitionTime`` is when ``status`` last
*changed*: setting a condition again with the same status keeps it, so a reconcile can set
its conditions on every pass and write only when something changed (the functions return
whether they did).

The list is changed in place: pass ``obj["status"].setdefault("conditions", [])`` of a copy
the caller owns.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSequence, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from kcontrol.metatime import format_time

__all__ = [
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
]

Condition = dict[str, Any]
_C = TypeVar("_C", bound=Mapping[str, Any])


def set_status_condition(
    conditions: MutableSequence[Condition],
    new: Mapping[str, Any],
    *,
    now: datetime | None = None,
) -> bool:
    """Set the condition of ``new["type"]`` in ``conditions``; True if the list changed.

    A new type is appended as a copy of ``new``, its ``lastTransitionTime`` set to ``now``
    unless given. An existing condition of the type is updated in place, field by field:
    ``status`` (and then ``lastTransitionTime``: ``new``'s if given, else ``now``),
    ``reason``, ``message`` and ``observedGeneration`` (a missing one counts as ``""`` /
    ``0``; an ``observedGeneration`` of 0 is removed); its ``lastTransitionTime`` stays while
    the status does not change. ``now`` defaults to the current time.
    """
    condition_type = new.get("type")
    if not condition_type:
        raise ValueError("a condition needs a type")
    stamp = new.get("lastTransitionTime") or format_time(now or datetime.now(UTC))
    existing = find_status_condition(conditions, condition_type)
    if existing is None:
        added = dict(new)
        added["lastTransitionTime"] = stamp
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = stamp
        changed = True
    for field in ("reason", "message"):
        if existing.get(field, "") != new.get(field, ""):
            existing[field] = new.get(field, "")
            changed = True
    generation = new.get("observedGeneration") or 0
    if (existing.get("observedGeneration") or 0) != generation:
        if generation:
            existing["observedGeneration"] = generation
        else:
            del existing["observedGeneration"]
        changed = True
    return changed


def remove_status_condition(conditions: MutableSequence[Condition], condition_type: str) -> bool:
    """Remove every condition of ``condition_type``; True if one was there."""
    kept = [c for c in conditions if c.get("type") != condition_type]
    if len(kept) == len(conditions):
        return False
    conditions[:] = kept
    return True


def find_status_condition(conditions: Sequence[_C], condition_type: str) -> _C | None:
    """The condition of ``condition_type`` (the dict in the list, to change in place), or
    None."""
    for condition in conditions:
        if condition.get("type") == condition_type:
            return condition
    return None


def is_status_condition_true(conditions: Sequence[Mapping[str, Any]], condition_type: str) -> bool:
    """Whether the condition of ``condition_type`` is present with status ``"True"``."""
    return is_status_condition_present_and_equal(conditions, condition_type, "True")


def is_status_condition_false(conditions: Sequence[Mapping[str, Any]], condition_type: str) -> bool:
    """Whether the condition of ``condition_type`` is present with status ``"False"``."""
    return is_status_condition_present_and_equal(conditions, condition_type, "False")


def is_status_condition_present_and_equal(
    conditions: Sequence[Mapping[str, Any]], condition_type: str, status: str
) -> bool:
    """Whether the condition of ``condition_type`` is present with ``status``."""
    condition = find_status_condition(conditions, condition_type)
    return condition is not None and condition.get("status") == status
