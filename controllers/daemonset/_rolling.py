"""Rolling-update arithmetic: how many daemon pods may surge or be unavailable, and which pods
on a node are old and new (upstream ``util.SurgeCount`` / ``UnavailableCount`` /
``AllowsSurge`` and ``update.go``'s ``updatedDesiredNodeCounts`` / ``findUpdatedPodsOnNode``,
Kubernetes 1.36).

``spec.updateStrategy.rollingUpdate.maxSurge`` and ``maxUnavailable`` are an int or a
percentage of ``desiredNumberScheduled`` (the nodes that should run a daemon pod). Both
percentages round *up* - unlike a Deployment, whose unavailability rounds down - so 50% of 3
nodes is 2 either way. Only a ``RollingUpdate`` strategy has them (``OnDelete``: 0 and 0).
When both resolve to 0 on a DaemonSet that should run somewhere, one pod may be unavailable:
validation forbids both being 0, but the percentages can get there.

A missing ``maxSurge`` is 0; a missing ``maxUnavailable`` of a ``RollingUpdate`` is an error,
as upstream (the API server defaults it to 1, so only a hand-made object lacks it). Malformed
values raise :class:`~kcontrol_controllers.intstr.IntOrPercentError` (a
:class:`ValueError`), the helper being the Deployment controller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final, NamedTuple

from kcontrol.client import Object

from ..intstr import IntOrPercentError, scaled_value_from_int_or_percent
from ._placement import DaemonPlacement
from ._pods import get_template_generation, is_pod_updated

__all__ = [
    "ON_DELETE",
    "ROLLING_UPDATE",
    "RollingCounts",
    "UpdatedPods",
    "allows_surge",
    "find_updated_pods_on_node",
    "surge_count",
    "unavailable_count",
    "updated_desired_node_counts",
]

ROLLING_UPDATE: Final = "RollingUpdate"
"""Replace old pods node by node, within ``maxSurge`` / ``maxUnavailable`` (the default)."""
ON_DELETE: Final = "OnDelete"
"""Replace an old pod only once someone deletes it."""


def _rolling_update(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``rollingUpdate`` parameters of a ``RollingUpdate`` DaemonSet, else ``None``."""
    strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
    if strategy.get("type") != ROLLING_UPDATE:
        return None
    params: Mapping[str, Any] | None = strategy.get("rollingUpdate")
    return params


def surge_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """How many nodes may run an extra, new pod beside the old one: ``maxSurge`` of
    ``number_to_schedule``, rounded up; 0 when the strategy is not ``RollingUpdate`` or sets
    no surge. Raises :class:`IntOrPercentError` for a malformed value."""
    params = _rolling_update(ds)
    if params is None or params.get("maxSurge") is None:
        return 0
    return scaled_value_from_int_or_percent(params["maxSurge"], number_to_schedule, True)


def unavailable_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """How many nodes may be without an available daemon pod during the update:
    ``maxUnavailable`` of ``number_to_schedule``, rounded up; 0 when the strategy is not
    ``RollingUpdate`` or has no ``rollingUpdate``. Raises :class:`IntOrPercentError` when
    ``maxUnavailable`` is missing or malformed."""
    params = _rolling_update(ds)
    if params is None:
        return 0
    return scaled_value_from_int_or_percent(params.get("maxUnavailable"), number_to_schedule, True)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """Whether a node may run two of the DaemonSet's pods at once (old and new): its surge
    of one node is positive. A malformed surge allows none."""
    try:
        return surge_count(ds, 1) > 0
    except IntOrPercentError:
        return False


class RollingCounts(NamedTuple):
    """The limits of one rolling-update step (upstream ``updatedDesiredNodeCounts``'
    results)."""

    max_surge: int
    max_unavailable: int
    desired_number_scheduled: int
    """The nodes that should run a daemon pod, which the percentages are of."""


def updated_desired_node_counts(
    ds: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    node_to_daemon_pods: MutableMapping[str, list[Object]],
    *,
    comparison_operators: bool = False,
) -> RollingCounts:
    """The surge and unavailability limits of ``ds`` over ``nodes``.

    Counts the nodes that should run a daemon pod (``should_run`` of
    :func:`~kcontrol_controllers.daemonset._placement.node_should_run_daemon_pod`) and adds
    each of them that ``node_to_daemon_pods`` lacks with an empty list, so that the caller
    also walks the nodes still waiting for their first pod. Then resolves ``maxSurge`` and
    ``maxUnavailable`` against that count; if both are 0 and the count is not, unavailability
    is 1.

    Raises :class:`IntOrPercentError` ("invalid value for MaxUnavailable: ...", or for
    MaxSurge) for a missing or malformed limit.
    """
    desired = 0
    placements = DaemonPlacement(ds, comparison_operators=comparison_operators)
    for node in nodes:
        placement = placements.for_node(node)
        if not placement.should_run:
            continue
        desired += 1
        node_to_daemon_pods.setdefault((node.get("metadata") or {}).get("name") or "", [])

    try:
        max_unavailable = unavailable_count(ds, desired)
    except IntOrPercentError as error:
        raise IntOrPercentError(f"invalid value for MaxUnavailable: {error}") from error
    try:
        max_surge = surge_count(ds, desired)
    except IntOrPercentError as error:
        raise IntOrPercentError(f"invalid value for MaxSurge: {error}") from error

    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    return RollingCounts(max_surge, max_unavailable, desired)


class UpdatedPods(NamedTuple):
    """The live daemon pods of one node, split by :func:`find_updated_pods_on_node`."""

    new_pod: Object | None
    old_pod: Object | None
    ok: bool
    """False when the node has two new or two old pods: the manage loop prunes them first."""


def find_updated_pods_on_node(
    ds: Mapping[str, Any], pods_on_node: Sequence[Object], hash_: str
) -> UpdatedPods:
    """The node's one up-to-date pod and one old pod, either possibly ``None``, ignoring pods
    being deleted; not ``ok`` (and neither pod) when there are two of a kind (upstream
    ``findUpdatedPodsOnNode``). Up to date is :func:`~kcontrol_controllers.daemonset._pods.
    is_pod_updated` against ``hash_`` and the DaemonSet's template generation (an unreadable
    generation annotation counts as none)."""
    try:
        generation = get_template_generation(ds)
    except ValueError:
        generation = None
    new_pod: Object | None = None
    old_pod: Object | None = None
    for pod in pods_on_node:
        if (pod.get("metadata") or {}).get("deletionTimestamp") is not None:
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return UpdatedPods(None, None, ok=False)
            new_pod = pod
        else:
            if old_pod is not None:
                return UpdatedPods(None, None, ok=False)
            old_pod = pod
    return UpdatedPods(new_pod, old_pod, ok=True)
