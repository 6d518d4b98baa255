"""Replica maths: how many pods a rollout may add or take away, and proportional scaling.

- ``maxSurge`` / ``maxUnavailable`` are an int or a percentage of ``spec.replicas``; the surge
  rounds up and the unavailability down, and if both resolve to 0 one pod may be unavailable
  (:func:`resolve_fenceposts`).
- :func:`new_rs_new_replicas` is how far the new ReplicaSet may grow in one step.
- :func:`replica_set_proportion` is the share of a scaling event one ReplicaSet takes when a
  Deployment is resized in the middle of a rollout.

Counts are plain ``int``; the API keeps them within int32.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..intstr import IntOrPercent, IntOrPercentError, scaled_value_from_int_or_percent
from ._annotations import get_max_replicas_annotation
from ._fields import (
    RECREATE,
    ROLLING_UPDATE,
    is_rolling_update,
    spec,
    spec_replicas,
    status_int,
    strategy_type,
)

__all__ = [
    "IntOrPercentError",
    "max_surge",
    "max_unavailable",
    "min_available",
    "new_rs_new_replicas",
    "proportional_sizes",
    "replica_count",
    "replica_set_fraction",
    "replica_set_proportion",
    "resolve_fenceposts",
    "scaled_value_from_int_or_percent",
]


def _rolling_params(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    strategy = spec(deployment).get("strategy") or {}
    return strategy.get("rollingUpdate") or {}


def resolve_fenceposts(
    surge: IntOrPercent | None, unavailable: IntOrPercent | None, desired: int
) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` in pods for ``desired`` replicas.

    ``None`` means 0. The surge rounds up, unavailability down; if both are 0, unavailability
    is 1 (validation forbids both being 0, but rounding down can get there). Raises
    :class:`IntOrPercentError` for a malformed value.
    """
    resolved_surge = scaled_value_from_int_or_percent(
        0 if surge is None else surge, desired, round_up=True
    )
    resolved_unavailable = scaled_value_from_int_or_percent(
        0 if unavailable is None else unavailable, desired, round_up=False
    )
    if resolved_surge == 0 and resolved_unavailable == 0:
        resolved_unavailable = 1
    return resolved_surge, resolved_unavailable


def max_surge(deployment: Mapping[str, Any]) -> int:
    """The Deployment's surge in pods; 0 unless it is a RollingUpdate. A malformed value
    (which validation rejects) counts as 0."""
    if not is_rolling_update(deployment):
        return 0
    params = _rolling_params(deployment)
    try:
        surge, _ = resolve_fenceposts(
            params.get("maxSurge"), params.get("maxUnavailable"), spec_replicas(deployment)
        )
    except IntOrPercentError:
        return 0
    return surge


def max_unavailable(deployment: Mapping[str, Any]) -> int:
    """How many pods may be unavailable during a rollout: 0 for Recreate or 0 replicas,
    never more than ``spec.replicas``."""
    if not is_rolling_update(deployment):
        return 0
    replicas = spec_replicas(deployment)
    if replicas == 0:
        return 0
    params = _rolling_params(deployment)
    try:
        _, unavailable = resolve_fenceposts(
            params.get("maxSurge"), params.get("maxUnavailable"), replicas
        )
    except IntOrPercentError:
        return 0
    return min(unavailable, replicas)


def min_available(deployment: Mapping[str, Any]) -> int:
    """How many pods must stay available during a rollout (0 for Recreate)."""
    if not is_rolling_update(deployment):
        return 0
    return spec_replicas(deployment) - max_unavailable(deployment)


def replica_count(replica_sets: Sequence[Mapping[str, Any] | None]) -> int:
    """The sum of ``spec.replicas`` (upstream ``GetReplicaCountForReplicaSets``)."""
    return sum(spec_replicas(rs) for rs in replica_sets if rs is not None)


def new_rs_new_replicas(
    deployment: Mapping[str, Any],
    all_replica_sets: Sequence[Mapping[str, Any] | None],
    new_rs: Mapping[str, Any],
) -> int:
    """The size the new ReplicaSet should have now.

    RollingUpdate: unchanged if all ReplicaSets together already have ``replicas +
    maxSurge`` pods; otherwise grown by the room left, but not past ``spec.replicas``.
    Recreate: ``spec.replicas``. Raises :class:`IntOrPercentError` for an unset or malformed
    maxSurge and :class:`ValueError` for an unknown strategy, as upstream.
    """
    kind = strategy_type(deployment)
    replicas = spec_replicas(deployment)
    if kind == ROLLING_UPDATE:
        surge = scaled_value_from_int_or_percent(
            _rolling_params(deployment).get("maxSurge"), replicas, round_up=True
        )
        current = replica_count(all_replica_sets)
        max_total = replicas + surge
        new_size = spec_replicas(new_rs)
        if current >= max_total:
            return new_size
        return new_size + min(max_total - current, replicas - new_size)
    if kind == RECREATE:
        return replicas
    raise ValueError(f"deployment type {kind} isn't supported")


def replica_set_fraction(replica_set: Mapping[str, Any], deployment: Mapping[str, Any]) -> int:
    """How many replicas ``replica_set`` gains (or, negative, loses) when the Deployment goes
    from the size in its ``max-replicas`` annotation to ``spec.replicas + maxSurge``.

    Scaling to 0 takes the whole ReplicaSet. Without a usable annotation (removed, or 0) the
    Deployment's ``status.replicas`` stands in for the old size; if that is 0 too, nothing
    moves. The new size is rounded half away from zero, as Go's ``math.Round``.
    """
    replicas = spec_replicas(deployment)
    size = spec_replicas(replica_set)
    if replicas == 0:
        return -size
    deployment_max = replicas + max_surge(deployment)
    before = get_max_replicas_annotation(replica_set)
    if not before:
        before = status_int(deployment, "replicas")
        if before == 0:
            return 0
    new_size = size * deployment_max / before
    return _round_half_away(new_size) - size


def _round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def replica_set_proportion(
    replica_set: Mapping[str, Any] | None,
    deployment: Mapping[str, Any],
    to_add: int,
    added: int,
) -> int:
    """The share of ``to_add`` (positive: scaling up) ``replica_set`` takes when ``added``
    has been handed out already: its :func:`replica_set_fraction`, bounded by what is left
    to hand out. Empty ReplicaSets never grow proportionally."""
    if replica_set is None or spec_replicas(replica_set) == 0 or to_add in (0, added):
        return 0
    fraction = replica_set_fraction(replica_set, deployment)
    allowed = to_add - added
    if to_add > 0:
        return min(fraction, allowed)
    return max(fraction, allowed)


def proportional_sizes(
    replica_sets: Sequence[Mapping[str, Any]], deployment: Mapping[str, Any], to_add: int
) -> list[int]:
    """The sizes of ``replica_sets`` after sharing out ``to_add`` replicas (negative: taking
    them away) in proportion to their sizes, in the given order (larger first; see
    :func:`kcontrol_controllers.deployment._scale.scale`).

    Each takes its :func:`replica_set_proportion` of what is left; rounding leftovers go to
    the first, which never goes below 0.
    """
    added = 0
    sizes: list[int] = []
    for rs in replica_sets:
        proportion = replica_set_proportion(rs, deployment, to_add, added) if to_add else 0
        sizes.append(spec_replicas(rs) + proportion)
        added += proportion
    if sizes and to_add:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return sizes
