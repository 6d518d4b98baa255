"""Taints and tolerations: whether a pod's tolerations let it onto a node, or keep it there.

Ports of k8s.io/api ``core/v1`` (``Toleration.ToleratesTaint``, ``Toleration.MatchToleration``,
the well-known taint keys), component-helpers ``scheduling/corev1``
(``TolerationsTolerateTaint``, ``FindMatchingUntoleratedTaint``) and kubernetes
``pkg/apis/core/v1/helper.AddOrUpdateTolerationInPodSpec``, as of Kubernetes 1.36.

Taints are the dicts of a node's ``spec.taints``, tolerations those of a pod's
``spec.tolerations``. A missing string field reads as ``""``, as Go's zero value.

How one toleration tolerates one taint (:func:`tolerates_taint`):

- an empty ``effect`` matches every effect, otherwise the effects must be equal;
- an empty ``key`` matches every key (validation allows it only with ``Exists``), otherwise
  the keys must be equal;
- ``operator`` ``Equal`` (or empty, its default) needs equal values, ``Exists`` matches any
  value; ``Gt`` / ``Lt`` compare the taint's value with the toleration's as integers, and only
  with ``comparison_operators`` (the ``TaintTolerationComparisonOperators`` feature, alpha
  and off by default in 1.36); any other operator tolerates nothing.

These functions never modify their arguments, except :func:`add_or_update_toleration`, which
writes the pod spec it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, Final

__all__ = [
    "EQUAL",
    "EXISTS",
    "GREATER_THAN",
    "LESS_THAN",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_NODE_DISK_PRESSURE",
    "TAINT_NODE_MEMORY_PRESSURE",
    "TAINT_NODE_NETWORK_UNAVAILABLE",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_OUT_OF_SERVICE",
    "TAINT_NODE_PID_PRESSURE",
    "TAINT_NODE_UNREACHABLE",
    "TAINT_NODE_UNSCHEDULABLE",
    "TaintFilter",
    "add_or_update_toleration",
    "do_not_schedule_taints_filter",
    "find_matching_untolerated_taint",
    "tolerates_taint",
    "toleration_matches",
    "tolerations_tolerate_taint",
]

# -- taint effects -----------------------------------------------------------------------------

NO_SCHEDULE: Final = "NoSchedule"
"""New pods that do not tolerate the taint are not scheduled; running ones stay."""
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
"""The scheduler avoids the node for pods that do not tolerate the taint, if it can."""
NO_EXECUTE: Final = "NoExecute"
"""Pods that do not tolerate the taint are not scheduled, and running ones are evicted."""

# -- toleration operators ----------------------------------------------------------------------

EQUAL: Final = "Equal"
"""The taint's value must equal the toleration's (the default when ``operator`` is empty)."""
EXISTS: Final = "Exists"
"""Any value of the taint (and, with an empty key, any taint)."""
GREATER_THAN: Final = "Gt"
"""The taint's value, an integer, is greater than the toleration's (feature-gated)."""
LESS_THAN: Final = "Lt"
"""The taint's value, an integer, is less than the toleration's (feature-gated)."""

# -- the taints the node lifecycle controller and the kubelet put on nodes ---------------------

TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
TAINT_NODE_OUT_OF_SERVICE: Final = "node.kubernetes.io/out-of-service"

TaintFilter = Callable[[Mapping[str, Any]], bool]
"""Chooses the taints a check considers (upstream's ``taintsFilterFunc``)."""

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _text(obj: Mapping[str, Any], field: str) -> str:
    value = obj.get(field)
    return value if isinstance(value, str) else ""


def _canonical_int64(text: str) -> int | None:
    """``text`` as an int64 if it is a decimal integer in canonical form (apimachinery's
    ``content.IsDecimalInteger``: ``0``, or an optional ``-`` and digits without a leading
    zero; no ``+``, no spaces), else ``None``."""
    digits = text[1:] if text.startswith("-") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    if digits[0] == "0" and text != "0":
        return None
    if len(digits) > 19:  # more digits than any int64 has: out of range whatever they are
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _compare_numeric_values(toleration_value: str, taint_value: str, operator: str) -> bool:
    """Whether ``taint_value`` is greater (``Gt``) or less (``Lt``) than ``toleration_value``;
    false when either is not a canonical int64 (upstream logs those and answers false)."""
    bound = _canonical_int64(toleration_value)
    actual = _canonical_int64(taint_value)
    if bound is None or actual is None:
        return False
    if operator == GREATER_THAN:
        return actual > bound
    if operator == LESS_THAN:
        return actual < bound
    return False


def tolerates_taint(
    toleration: Mapping[str, Any], taint: Mapping[str, Any], *, comparison_operators: bool = False
) -> bool:
    """Whether ``toleration`` tolerates ``taint``, by the rules in this module's docstring
    (upstream ``Toleration.ToleratesTaint``)."""
    effect = _text(toleration, "effect")
    if effect and effect != _text(taint, "effect"):
        return False
    key = _text(toleration, "key")
    if key and key != _text(taint, "key"):
        return False
    operator = _text(toleration, "operator")
    if operator in ("", EQUAL):
        return _text(toleration, "value") == _text(taint, "value")
    if operator == EXISTS:
        return True
    if operator in (GREATER_THAN, LESS_THAN):
        return comparison_operators and _compare_numeric_values(
            _text(toleration, "value"), _text(taint, "value"), operator
        )
    return False


def tolerations_tolerate_taint(
    tolerations: Iterable[Mapping[str, Any]] | None,
    taint: Mapping[str, Any],
    *,
    comparison_operators: bool = False,
) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(
        tolerates_taint(toleration, taint, comparison_operators=comparison_operators)
        for toleration in tolerations or ()
    )


def find_matching_untolerated_taint(
    taints: Iterable[Mapping[str, Any]] | None,
    tolerations: Iterable[Mapping[str, Any]] | None,
    inclusion_filter: TaintFilter | None = None,
    *,
    comparison_operators: bool = False,
) -> Mapping[str, Any] | None:
    """The first of ``taints`` chosen by ``inclusion_filter`` (all of them when it is
    ``None``) that none of ``tolerations`` tolerates, or ``None`` when they tolerate every
    chosen taint (upstream ``FindMatchingUntoleratedTaint``, whose boolean is ``is not
    None`` here)."""
    toleration_list = list(tolerations or ())
    for taint in taints or ():
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(
            toleration_list, taint, comparison_operators=comparison_operators
        ):
            return taint
    return None


def do_not_schedule_taints_filter(taint: Mapping[str, Any]) -> bool:
    """The taints that keep new pods off a node: ``NoSchedule`` and ``NoExecute`` (the
    scheduler's ``DoNotScheduleTaintsFilterFunc``)."""
    return _text(taint, "effect") in (NO_SCHEDULE, NO_EXECUTE)


def toleration_matches(toleration: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """Whether two tolerations are the same toleration: tolerations are unique by key,
    effect, operator and value (upstream ``Toleration.MatchToleration``; ``tolerationSeconds``
    is not part of the identity)."""
    return all(
        _text(toleration, field) == _text(other, field)
        for field in ("key", "effect", "operator", "value")
    )


def add_or_update_toleration(spec: MutableMapping[str, Any], toleration: Mapping[str, Any]) -> bool:
    """Put ``toleration`` into the pod ``spec``'s ``tolerations``: every entry that
    :func:`toleration_matches` it is replaced by a copy of it, in place in the list; if none
    does, it is appended. Returns whether the list's contents changed.

    ``spec["tolerations"]`` becomes a new list (the old one is not modified). Upstream's
    ``AddOrUpdateTolerationInPodSpec`` means to leave an identical entry alone, but its
    comparison (a pointer against a value) never succeeds, so it replaces every matching
    entry - dropping, for instance, the ``tolerationSeconds`` of a matching toleration; this
    does the same.
    """
    current = list(spec.get("tolerations") or ())
    replaced = False
    updated: list[Any] = []
    for existing in current:
        if toleration_matches(toleration, existing):
            updated.append(dict(toleration))
            replaced = True
        else:
            updated.append(existing)
    if not replaced:
        updated.append(dict(toleration))
    spec["tolerations"] = updated
    return updated != current
