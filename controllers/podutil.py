"""Pure helpers about pods, shared by the workload controllers.

Ports of the pod predicates of kubernetes ``pkg/api/v1/pod`` (``IsPodReady``,
``IsPodAvailable``) and of ``pkg/controller/controller_utils.go`` (``IsPodActive``,
``FilterActivePods``, ``GetPodFromTemplate``, the pod controller index, the next availability
check). Every function reads pods as the API server sends them (plain dicts) and never
mutates them; times are timezone-aware :class:`~datetime.datetime` values and durations are
float seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kcontrol.client import Object, deep_copy
from kcontrol.controller import get_controller_of
from kcontrol.informers import Indexer, IndexFunc, SharedIndexInformer
from kcontrol.labels import Selector
from kcontrol.metatime import parse_time

from .conditions import get_condition

__all__ = [
    "POD_CONTROLLER_INDEX",
    "controller_index_func",
    "ensure_index",
    "filter_active_pods",
    "filter_by_owner",
    "filter_claimed_pods",
    "filter_pods_by_owner",
    "filter_terminating_pods",
    "find_min_next_pod_availability_check",
    "get_pod_ready_condition",
    "is_controlled_by",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "is_pod_terminating",
    "new_controller_ref",
    "next_pod_availability_check",
    "pod_controller_index_func",
    "pod_controller_index_key",
    "pod_from_template",
    "pod_key",
    "pod_ready_time",
    "pods_generate_name",
    "replica_state_changed",
]

POD_CONTROLLER_INDEX = "podController"
"""Name of the pod informer index by controller reference (upstream ``PodControllerIndex``);
its values are :func:`pod_controller_index_key`."""

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_MAX_NAME_LENGTH = 253  # a DNS-1123 subdomain, what pod names are


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("status") or {}


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name``: how expectations name the pods they wait for (upstream ``PodKey``)."""
    meta = _meta(pod)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


# -- phases and lifecycle ----------------------------------------------------------------------


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    """True once the pod reached ``Succeeded`` or ``Failed``: its containers will never run
    again."""
    return _status(pod).get("phase") in _TERMINAL_PHASES


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """True for a pod that counts as a replica: not terminal and not being deleted."""
    return not is_pod_terminal(pod) and _meta(pod).get("deletionTimestamp") is None


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    """True for a pod being deleted (``deletionTimestamp`` set) that has not reached a
    terminal phase yet: what ``status.terminatingReplicas`` counts."""
    return not is_pod_terminal(pod) and _meta(pod).get("deletionTimestamp") is not None


def filter_active_pods(pods: Iterable[Object]) -> list[Object]:
    """The pods for which :func:`is_pod_active` holds, in their order."""
    return [pod for pod in pods if is_pod_active(pod)]


def filter_terminating_pods(pods: Iterable[Object]) -> list[Object]:
    """The pods for which :func:`is_pod_terminating` holds, in their order."""
    return [pod for pod in pods if is_pod_terminating(pod)]


# -- readiness and availability ----------------------------------------------------------------


def get_pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first ``Ready`` entry of ``status.conditions``, or ``None``."""
    return get_condition(_status(pod), "Ready")


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """True when the pod's ``Ready`` condition is ``True``."""
    condition = get_pod_ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def pod_ready_time(pod: Mapping[str, Any]) -> datetime | None:
    """When a ready pod became ready (its ``Ready`` condition's ``lastTransitionTime``);
    ``None`` for a pod that is not ready or has no transition time."""
    if not is_pod_ready(pod):
        return None
    condition = get_pod_ready_condition(pod)
    assert condition is not None
    return parse_time(condition.get("lastTransitionTime"))


def _readiness(pod: Mapping[str, Any]) -> tuple[Any, Any] | None:
    condition = get_pod_ready_condition(pod)
    if condition is None:
        return None
    return condition.get("status"), condition.get("lastTransitionTime")


def replica_state_changed(old: Mapping[str, Any], cur: Mapping[str, Any]) -> bool:
    """True when a pod update changed what a replica count reads of it: its phase, its
    ``deletionTimestamp``, or its ``Ready`` condition (status or transition time).

    Everything else a pod update can bring - the node it was bound to, IPs, container
    statuses, the other conditions - changes neither whether the pod counts as a replica nor
    whether it is ready or available. (Labels and owner references do, and are the caller's
    to compare, with the selectors it knows.)"""
    return (
        _status(old).get("phase") != _status(cur).get("phase")
        or _meta(old).get("deletionTimestamp") != _meta(cur).get("deletionTimestamp")
        or _readiness(old) != _readiness(cur)
    )


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """True for a ready pod that has been ready for at least ``min_ready_seconds`` at
    ``now`` (any ready pod when ``min_ready_seconds`` is 0; never one whose ready condition
    has no transition time otherwise).

    The boundary is inclusive, as 1.36's ``IsPodAvailable``
    (``readyTime + minReadySeconds <= now``; older releases compared with ``<``): a pod is
    available at the very moment the requeue after ``min_ready_seconds`` checks it.
    """
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    ready_since = pod_ready_time(pod)
    return ready_since is not None and ready_since + timedelta(seconds=min_ready_seconds) <= now


def next_pod_availability_check(
    pod: Mapping[str, Any], min_ready_seconds: int, now: datetime
) -> float | None:
    """Seconds from ``now`` until a ready pod becomes available; ``None`` if it is not ready,
    is available already, has no ready transition time, or ``min_ready_seconds`` is 0."""
    if min_ready_seconds <= 0 or not is_pod_ready(pod):
        return None
    ready_since = pod_ready_time(pod)
    if ready_since is None:
        return None
    remaining = (ready_since + timedelta(seconds=min_ready_seconds) - now).total_seconds()
    return remaining if remaining > 0 else None


def find_min_next_pod_availability_check(
    pods: Sequence[Mapping[str, Any]],
    min_ready_seconds: int,
    last_status_evaluation: datetime,
    now: datetime,
) -> float | None:
    """Seconds from ``now`` until the next of ``pods`` becomes available, or ``None``.

    The pod is chosen as of ``last_status_evaluation`` (when the owner's available count was
    computed), so a pod that became available between then and ``now`` is not skipped: its
    check is due at once (0). Upstream's ``FindMinNextPodAvailabilityCheck``.
    """
    earliest: float | None = None
    earliest_pod: Mapping[str, Any] | None = None
    for pod in pods:
        delay = next_pod_availability_check(pod, min_ready_seconds, last_status_evaluation)
        if delay is not None and (earliest is None or delay < earliest):
            earliest, earliest_pod = delay, pod
    if earliest_pod is None:
        return None
    delay = next_pod_availability_check(earliest_pod, min_ready_seconds, now)
    return delay if delay is not None else 0.0


# -- ownership ---------------------------------------------------------------------------------


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when ``obj``'s controller reference names ``owner``'s UID."""
    ref = get_controller_of(obj)
    return ref is not None and ref.get("uid") == _meta(owner).get("uid")


def filter_claimed_pods(
    owner: Mapping[str, Any], selector: Selector, pods: Iterable[Object]
) -> list[Object]:
    """The pods controlled by ``owner`` whose labels still match ``selector``."""
    return [
        pod
        for pod in pods
        if is_controlled_by(pod, owner) and selector.matches(_meta(pod).get("labels") or {})
    ]


def new_controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The ``ownerReferences`` entry making ``owner`` an object's controller (upstream
    ``metav1.NewControllerRef``): ``controller`` and ``blockOwnerDeletion`` are true."""
    meta = _meta(owner)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_controller_index_key(namespace: str, controller_ref: Mapping[str, Any] | None) -> str:
    """The :data:`POD_CONTROLLER_INDEX` value of pods controlled by ``controller_ref``
    (``namespace/Kind/name/uid``), or of the orphans of ``namespace`` when it is ``None``.
    Any other kind of owned object is indexed the same way (:func:`controller_index_func`)."""
    if controller_ref is None:
        return namespace
    return (
        f"{namespace}/{controller_ref.get('kind', '')}/{controller_ref.get('name', '')}/"
        f"{controller_ref.get('uid', '')}"
    )


def controller_index_func(obj: Object) -> list[str]:
    """An index function by controller reference: one value per object,
    :func:`pod_controller_index_key` of its namespace and controller (orphans: the
    namespace alone). :data:`POD_CONTROLLER_INDEX` on pods; the Deployment controller uses it
    on ReplicaSets too."""
    return [pod_controller_index_key(_meta(obj).get("namespace", ""), get_controller_of(obj))]


pod_controller_index_func = controller_index_func
"""The index function of :data:`POD_CONTROLLER_INDEX`."""


def ensure_index(informer: SharedIndexInformer, name: str, index_func: IndexFunc) -> None:
    """Add the index ``name`` to ``informer`` unless a controller sharing it already did
    (controllers that share an index name must share its function)."""
    if name not in informer.indexer.get_indexers():
        informer.add_indexers({name: index_func})


def filter_by_owner(
    indexer: Indexer,
    index_name: str,
    owner: Mapping[str, Any],
    owner_kind: str,
    *,
    include_orphans: bool,
) -> list[Object]:
    """The cached objects controlled by ``owner`` (of kind ``owner_kind``) and, with
    ``include_orphans``, the objects of its namespace that have no controller.

    ``indexer`` must carry ``index_name`` built with :func:`controller_index_func`. Raises
    :class:`ValueError` when the owner lacks a namespace, name or UID, as upstream's
    ``FilterPodsByOwner``.
    """
    meta = _meta(owner)
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    if not namespace or not name or not uid or not owner_kind:
        raise ValueError(f"owner needs a namespace, name, uid and kind: {namespace}/{name} {uid}")
    objects = indexer.by_index(
        index_name,
        pod_controller_index_key(namespace, {"kind": owner_kind, "name": name, "uid": uid}),
    )
    if include_orphans:
        objects.extend(indexer.by_index(index_name, pod_controller_index_key(namespace, None)))
    return objects


def filter_pods_by_owner(
    indexer: Indexer, owner: Mapping[str, Any], owner_kind: str, *, include_orphans: bool
) -> list[Object]:
    """The cached pods controlled by ``owner`` (of kind ``owner_kind``) and, with
    ``include_orphans``, the pods of its namespace that have no controller: :func:`filter_by_owner`
    on :data:`POD_CONTROLLER_INDEX`."""
    return filter_by_owner(
        indexer, POD_CONTROLLER_INDEX, owner, owner_kind, include_orphans=include_orphans
    )


# -- creating pods -----------------------------------------------------------------------------


def pods_generate_name(controller_name: str) -> str:
    """The ``generateName`` of a controller's pods: ``<name>-``, or the bare name when the
    dash would make it too long to be a valid pod name prefix."""
    prefix = f"{controller_name}-"
    return prefix if len(prefix) <= _MAX_NAME_LENGTH else controller_name


def pod_from_template(
    template: Mapping[str, Any],
    parent: Mapping[str, Any],
    controller_ref: Mapping[str, Any] | None,
) -> Object:
    """The pod a controller creates from its pod ``template`` (upstream
    ``GetPodFromTemplate``): the template's labels, annotations, finalizers and a deep copy
    of its spec, ``generateName`` from :func:`pods_generate_name` of ``parent``'s name, and
    ``controller_ref`` as its only owner reference. Empty maps and lists are left out, as Go
    omits them. Neither argument is modified."""
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {}
    if template_meta.get("labels"):
        metadata["labels"] = dict(template_meta["labels"])
    if template_meta.get("annotations"):
        metadata["annotations"] = dict(template_meta["annotations"])
    metadata["generateName"] = pods_generate_name(str(_meta(parent).get("name", "")))
    if template_meta.get("finalizers"):
        metadata["finalizers"] = list(template_meta["finalizers"])
    if controller_ref is not None:
        metadata["ownerReferences"] = [dict(controller_ref)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": deep_copy(template.get("spec") or {}),
    }
