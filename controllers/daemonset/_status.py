"""DaemonSet status: the counts from the nodes and the daemon pods, and the guarded write
(upstream ``updateDaemonSetStatus`` and ``storeDaemonSetStatus``, Kubernetes 1.36).

For every node that should run a daemon pod (``should_run``), it counts toward
``desiredNumberScheduled``; if it has daemon pods it is ``currentNumberScheduled``, and its
first pod in :func:`~kcontrol_controllers.daemonset._pods.creation_order_key` order decides
``numberReady``, ``numberAvailable`` (ready for ``minReadySeconds``) and
``updatedNumberScheduled`` (made from the current revision). A node that should not run one
but has daemon pods is ``numberMisscheduled``. ``numberUnavailable`` is desired minus
available. The write is skipped when every count is as stored and ``observedGeneration`` is
current.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

from kcontrol.client import DAEMONSETS, Client, Object, deep_copy
from kcontrol.logging import get_logger

from ..podutil import is_pod_available, is_pod_ready
from ._names import STATUS_UPDATE_RETRIES
from ._placement import DaemonPlacement
from ._pods import get_template_generation, is_pod_updated, oldest_first

__all__ = [
    "STATUS_FIELDS",
    "DaemonSetCounts",
    "calculate_counts",
    "status_in_sync",
    "store_daemon_set_status",
]

_log = get_logger(__name__)


class DaemonSetCounts(NamedTuple):
    """The counts of ``status``, named and ordered as its fields."""

    desiredNumberScheduled: int
    currentNumberScheduled: int
    numberMisscheduled: int
    numberReady: int
    updatedNumberScheduled: int
    numberAvailable: int
    numberUnavailable: int


STATUS_FIELDS: Final = DaemonSetCounts._fields


def calculate_counts(
    ds: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    node_to_daemon_pods: Mapping[str, Sequence[Object]],
    hash_: str,
    now: datetime,
) -> DaemonSetCounts:
    """The status counts of ``ds`` (module docstring); ``node_to_daemon_pods`` are its claimed
    pods by node, ``hash_`` the current revision's hash, ``now`` the time availability is
    judged at. Pure."""
    try:
        generation = get_template_generation(ds)
    except ValueError:
        generation = None  # the hash decides
    min_ready_seconds = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    desired = current = misscheduled = ready = updated = available = 0
    placements = DaemonPlacement(ds)
    for node in nodes:
        placement = placements.for_node(node)
        pods = node_to_daemon_pods.get((node.get("metadata") or {}).get("name") or "") or ()
        if not placement.should_run:
            if pods:
                misscheduled += 1
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = oldest_first(pods)[0]
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready_seconds, now):
                available += 1
        if is_pod_updated(pod, hash_, generation):
            updated += 1
    return DaemonSetCounts(
        desiredNumberScheduled=desired,
        currentNumberScheduled=current,
        numberMisscheduled=misscheduled,
        numberReady=ready,
        updatedNumberScheduled=updated,
        numberAvailable=available,
        numberUnavailable=desired - available,
    )


def status_in_sync(ds: Mapping[str, Any], counts: DaemonSetCounts) -> bool:
    """Whether ``ds``'s stored status already holds ``counts`` and a current
    ``observedGeneration``: nothing to write."""
    status = ds.get("status") or {}
    generation = int((ds.get("metadata") or {}).get("generation") or 0)
    return (
        all(int(status.get(field) or 0) == value for field, value in counts._asdict().items())
        and int(status.get("observedGeneration") or 0) >= generation
    )


async def store_daemon_set_status(
    client: Client, ds: Mapping[str, Any], counts: DaemonSetCounts, *, update_observed_gen: bool
) -> Object | None:
    """Write ``counts`` (and, with ``update_observed_gen``, ``observedGeneration`` = the
    DaemonSet's generation) to ``daemonsets/status``; returns the stored DaemonSet, or
    ``None`` when nothing needed writing. A failed write is retried
    :data:`~kcontrol_controllers.daemonset._names.STATUS_UPDATE_RETRIES` time(s) on a fresh
    read; the last write error is raised, or the read's. ``ds`` is not modified."""
    if status_in_sync(ds, counts):
        return None
    meta = ds.get("metadata") or {}
    to_update: Object = deep_copy(dict(ds))
    attempt = 0
    while True:
        status = to_update.setdefault("status", {})
        if update_observed_gen:
            status["observedGeneration"] = int(meta.get("generation") or 0)
        status.update(counts._asdict())
        try:
            return await client.update_status(DAEMONSETS, to_update)
        except Exception:
            if attempt >= STATUS_UPDATE_RETRIES:
                raise
        attempt += 1
        _log.debug(
            "retrying DaemonSet status write", key=f"{meta.get('namespace')}/{meta.get('name')}"
        )
        to_update = await client.get(DAEMONSETS, meta["name"], namespace=meta.get("namespace"))
