"""Daemon pods: the pod a DaemonSet makes for a node, which node a pod is for, and whether it
is up to date.

Ports of upstream ``pkg/controller/daemon/util/daemonset_util.go`` and of the pure helpers of
``daemon_controller.go`` (``NewPod``, ``podByCreationTimestampAndPhase``,
``failedPodsBackoffKey``, ``getUnscheduledPodsWithoutNode``), Kubernetes 1.36.

- Every daemon pod tolerates the node problems the node lifecycle controller and the kubelet
  taint nodes with (:data:`DAEMON_POD_TOLERATIONS`): a daemon is meant to keep running through
  them, and to be placed on a node that has them.
- A new pod is pinned to its node by a required node affinity on ``metadata.name``, not by
  ``spec.nodeName``: the scheduler still binds it, so preemption and resource fit apply
  (:func:`replace_daemon_set_pod_node_name_node_affinity`); :func:`get_target_node_name`
  reads the node back from either.
- A pod is up to date when its ``controller-revision-hash`` label is the current revision's
  hash, or its ``pod-template-generation`` label the DaemonSet's template generation
  (:func:`is_pod_updated`).

Functions return new dicts and leave their arguments alone, unless a docstring says it writes
one (the mutators take the object the caller owns, as upstream's pointer arguments).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from datetime import datetime
from typing import Any, Final

from kcontrol.client import Object, deep_copy
from kcontrol.metatime import ZERO_TIME, parse_time

from ..intstr import parse_decimal
from ..podutil import is_pod_available
from ..scheduling import (
    EXISTS,
    NO_EXECUTE,
    NO_SCHEDULE,
    NODE_NAME_FIELD,
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
    add_or_update_toleration,
)
from ._names import TEMPLATE_GENERATION_ANNOTATION, TEMPLATE_GENERATION_LABEL, UNIQUE_LABEL_KEY

__all__ = [
    "DAEMON_POD_TOLERATIONS",
    "HOST_NETWORK_TOLERATIONS",
    "add_or_update_daemon_pod_tolerations",
    "create_pod_template",
    "creation_order_key",
    "failed_pods_backoff_key",
    "get_target_node_name",
    "get_template_generation",
    "get_unscheduled_pods_without_node",
    "is_pod_updated",
    "new_pod",
    "oldest_first",
    "replace_daemon_set_pod_node_name_node_affinity",
    "split_by_available_pods",
]

DAEMON_POD_TOLERATIONS: Final[tuple[Mapping[str, str], ...]] = (
    # Not evicted by the node lifecycle controller when the node goes not ready or unreachable.
    {"key": TAINT_NODE_NOT_READY, "operator": EXISTS, "effect": NO_EXECUTE},
    {"key": TAINT_NODE_UNREACHABLE, "operator": EXISTS, "effect": NO_EXECUTE},
    # Placed on nodes under pressure and on cordoned nodes (the node-condition taints).
    {"key": TAINT_NODE_DISK_PRESSURE, "operator": EXISTS, "effect": NO_SCHEDULE},
    {"key": TAINT_NODE_MEMORY_PRESSURE, "operator": EXISTS, "effect": NO_SCHEDULE},
    {"key": TAINT_NODE_PID_PRESSURE, "operator": EXISTS, "effect": NO_SCHEDULE},
    {"key": TAINT_NODE_UNSCHEDULABLE, "operator": EXISTS, "effect": NO_SCHEDULE},
)
"""The tolerations every daemon pod gets, forever (no ``tolerationSeconds``), in this order."""

HOST_NETWORK_TOLERATIONS: Final[tuple[Mapping[str, str], ...]] = (
    {"key": TAINT_NODE_NETWORK_UNAVAILABLE, "operator": EXISTS, "effect": NO_SCHEDULE},
)
"""Added after :data:`DAEMON_POD_TOLERATIONS` for pods on the host's network, which do not
need the pod network (a network plugin's own daemon, for one)."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


# -- templates and new pods --------------------------------------------------------------------


def add_or_update_daemon_pod_tolerations(spec: MutableMapping[str, Any]) -> None:
    """Write the daemon tolerations into the pod ``spec``: :data:`DAEMON_POD_TOLERATIONS`,
    and :data:`HOST_NETWORK_TOLERATIONS` when ``spec.hostNetwork`` is true. A toleration of
    the pod with the same key, operator, effect and value is replaced (its
    ``tolerationSeconds`` dropped); others are kept (upstream
    ``AddOrUpdateDaemonPodTolerations``)."""
    for toleration in DAEMON_POD_TOLERATIONS:
        add_or_update_toleration(spec, toleration)
    if spec.get("hostNetwork"):
        for toleration in HOST_NETWORK_TOLERATIONS:
            add_or_update_toleration(spec, toleration)


def create_pod_template(template: Mapping[str, Any], generation: int | None, hash_: str) -> Object:
    """A copy of the DaemonSet's pod ``template`` to create pods from: the daemon
    tolerations added, the ``pod-template-generation`` label set when ``generation`` is not
    ``None``, and the ``controller-revision-hash`` label set when ``hash_`` is not empty
    (upstream ``CreatePodTemplate``)."""
    created: Object = deep_copy(dict(template))
    metadata = created["metadata"] = dict(created.get("metadata") or {})
    spec = created["spec"] = dict(created.get("spec") or {})
    add_or_update_daemon_pod_tolerations(spec)
    labels = metadata["labels"] = dict(metadata.get("labels") or {})
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[UNIQUE_LABEL_KEY] = hash_
    return created


def new_pod(ds: Mapping[str, Any], node_name: str) -> Object:
    """The pod ``ds`` would run on the node ``node_name``, to test against the node's
    scheduling constraints: the template's metadata and spec, the DaemonSet's namespace,
    ``spec.nodeName`` set, and the daemon tolerations added (upstream ``NewPod``). It is never
    created as such."""
    template = (ds.get("spec") or {}).get("template") or {}
    metadata: Object = deep_copy(dict(template.get("metadata") or {}))
    metadata["namespace"] = _meta(ds).get("namespace", "")
    spec: Object = deep_copy(dict(template.get("spec") or {}))
    spec["nodeName"] = node_name
    add_or_update_daemon_pod_tolerations(spec)
    return {"metadata": metadata, "spec": spec}


# -- pinning a pod to its node -----------------------------------------------------------------


def _node_name_terms(node_name: str) -> list[dict[str, Any]]:
    requirement = {"key": NODE_NAME_FIELD, "operator": "In", "values": [node_name]}
    return [{"matchFields": [requirement]}]


def replace_daemon_set_pod_node_name_node_affinity(
    affinity: MutableMapping[str, Any] | None, node_name: str
) -> MutableMapping[str, Any]:
    """Pin a pod to ``node_name``: its required node affinity becomes the single term
    ``matchFields: metadata.name In [node_name]`` (upstream
    ``ReplaceDaemonSetPodNodeNameNodeAffinity``).

    Writes ``affinity`` (the pod spec's, which the caller owns) and returns it; ``None`` gives
    a new affinity. Every required term is replaced - the caller has checked that the node
    satisfies them - while preferred terms and pod (anti-)affinity are kept.
    """
    if affinity is None:
        affinity = {}
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is None:
        node_affinity = affinity["nodeAffinity"] = {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": _node_name_terms(node_name)
        }
    else:
        required["nodeSelectorTerms"] = _node_name_terms(node_name)
    return affinity


def get_target_node_name(pod: Mapping[str, Any]) -> str:
    """The node ``pod`` is for: ``spec.nodeName`` once it is bound, else the one value of the
    first required ``matchFields`` term ``metadata.name In [...]`` (upstream
    ``GetTargetNodeName``).

    Raises :class:`ValueError` when the pod has neither, or when that term names more than
    one node.
    """
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    who = f"{_meta(pod).get('namespace', '')}/{_meta(pod).get('name', '')}"
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        raise ValueError(
            "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            f" for pod {who}"
        )
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        raise ValueError(
            f"no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {who}"
        )
    for term in terms:
        for requirement in term.get("matchFields") or ():
            if requirement.get("key") == NODE_NAME_FIELD and requirement.get("operator") == "In":
                values = list(requirement.get("values") or ())
                if len(values) != 1:
                    raise ValueError(
                        f"the matchFields value of '{NODE_NAME_FIELD}' is not unique for pod {who}"
                    )
                return str(values[0])
    raise ValueError(f"no node name found for pod {who}")


# -- up to date, available ---------------------------------------------------------------------


def get_template_generation(ds: Mapping[str, Any]) -> int | None:
    """The DaemonSet's template generation, from its ``deprecated.daemonset.template.
    generation`` annotation; ``None`` without one (upstream ``GetTemplateGeneration``).

    Raises :class:`ValueError` when the annotation is not a decimal int64.
    """
    annotation = (_meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if annotation is None:
        return None
    return parse_decimal(annotation, bits=64, signed=True)


def is_pod_updated(pod: Mapping[str, Any], hash_: str, template_generation: int | None) -> bool:
    """Whether ``pod`` was made from the current template: its ``controller-revision-hash``
    label is ``hash_`` (when ``hash_`` is not empty), or its ``pod-template-generation``
    label is ``template_generation`` (when that is not ``None``) - either is enough (upstream
    ``IsPodUpdated``)."""
    labels = _labels(pod)
    template_matches = template_generation is not None and labels.get(
        TEMPLATE_GENERATION_LABEL
    ) == str(template_generation)
    hash_matches = bool(hash_) and labels.get(UNIQUE_LABEL_KEY) == hash_
    return hash_matches or template_matches


def split_by_available_pods(
    min_ready_seconds: int, pods: Iterable[Object], now: datetime
) -> tuple[list[Object], list[Object]]:
    """``pods`` split into the available ones and the others, at ``now``, each in their
    order (upstream's former ``SplitByAvailablePods``; availability is
    :func:`~kcontrol_controllers.podutil.is_pod_available`)."""
    available: list[Object] = []
    unavailable: list[Object] = []
    for pod in pods:
        (available if is_pod_available(pod, min_ready_seconds, now) else unavailable).append(pod)
    return available, unavailable


# -- ordering, bookkeeping ---------------------------------------------------------------------


def creation_order_key(pod: Mapping[str, Any]) -> tuple[bool, datetime, str]:
    """Sort key for the daemon pods of one node: bound pods (``spec.nodeName`` set) before
    pending ones, then the oldest first, then by name (upstream
    ``podByCreationTimestampAndPhase``). The first pod is the one that counts toward status
    and is kept when there are several."""
    unscheduled = not (pod.get("spec") or {}).get("nodeName")
    created = parse_time(_meta(pod).get("creationTimestamp")) or ZERO_TIME
    return unscheduled, created, str(_meta(pod).get("name", ""))


def oldest_first(pods: Sequence[Object]) -> list[Object]:
    """``pods`` in :func:`creation_order_key` order; one pod (a node's usual count) is its
    own order, without parsing its creation time."""
    if len(pods) < 2:
        return list(pods)
    return sorted(pods, key=creation_order_key)


def failed_pods_backoff_key(ds: Mapping[str, Any], node_name: str) -> str:
    """The failed-pods backoff entry of ``ds`` on ``node_name``:
    ``<uid>/<status.observedGeneration>/<node>``, so a new generation starts without
    backoff (upstream ``failedPodsBackoffKey``)."""
    observed = (ds.get("status") or {}).get("observedGeneration") or 0
    return f"{_meta(ds).get('uid', '')}/{observed}/{node_name}"


def get_unscheduled_pods_without_node(
    nodes: Iterable[Mapping[str, Any]], node_to_daemon_pods: Mapping[str, Sequence[Object]]
) -> list[str]:
    """The names of the pods that are pinned to a node missing from ``nodes`` and not bound
    yet. They never will be, and the pod garbage collector only deletes bound pods, so the
    DaemonSet controller deletes them (upstream ``getUnscheduledPodsWithoutNode``). In the
    order of ``node_to_daemon_pods``."""
    existing = {_meta(node).get("name") for node in nodes}
    return [
        str(_meta(pod).get("name", ""))
        for node_name, pods in node_to_daemon_pods.items()
        if node_name not in existing
        for pod in pods
        if not (pod.get("spec") or {}).get("nodeName")
    ]
