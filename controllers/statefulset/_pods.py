"""The pods a StatefulSet makes, the revision each carries, and the events its pod control
records.

A new member is the set's template made into a pod (``kcontrol_controllers.podutil``'s
``pod_from_template``, with the set as controller), named for its ordinal, given its identity
and its claims' volumes (:func:`new_stateful_set_pod`). During a rolling update the members
below the partition are made from the current revision and the others from the update
revision (:func:`new_versioned_stateful_set_pod`); the ``controller-revision-hash`` label
says which (:func:`set_pod_revision`, :func:`get_pod_revision`).

The event helpers give the type, reason and message upstream's ``recordPodEvent`` /
``recordClaimEvent`` write, so that the controller's events read as
kube-controller-manager's.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from kcontrol.client import Object

from ..podutil import new_controller_ref, pod_from_template
from ._fields import labels, name, spec, status_int, update_strategy, update_strategy_type
from ._identity import get_pod_name, get_start_ordinal, init_identity
from ._names import API_VERSION, KIND, REVISION_LABEL, ROLLING_UPDATE
from ._storage import update_storage

__all__ = [
    "EVENT_NORMAL",
    "EVENT_WARNING",
    "claim_event",
    "conflicting_controller_event",
    "get_pod_revision",
    "new_stateful_set_pod",
    "new_versioned_stateful_set_pod",
    "pod_event",
    "set_pod_revision",
]

EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"


def set_pod_revision(pod: MutableMapping[str, Any], revision: str) -> None:
    """Label ``pod`` (modified in place) with the name of the revision it was made from."""
    metadata = pod.setdefault("metadata", {})
    pod_labels = metadata.get("labels")
    if pod_labels is None:
        pod_labels = metadata["labels"] = {}
    pod_labels[REVISION_LABEL] = revision


def get_pod_revision(pod: Mapping[str, Any]) -> str:
    """The revision ``pod`` was made from, ``""`` if it has no revision label."""
    return str(labels(pod).get(REVISION_LABEL) or "")


def new_stateful_set_pod(set_: Mapping[str, Any], ordinal: int) -> Object:
    """The member of ``set_`` with ``ordinal``, as the controller creates it: the template's
    labels, annotations, finalizers and spec, the set as controller, the name
    ``<set>-<ordinal>`` (and ``generateName`` ``<set>-``, as upstream), its identity
    (hostname, subdomain, the pod-name and pod-index labels) and its claims' volumes."""
    template = spec(set_).get("template") or {}
    pod = pod_from_template(template, set_, new_controller_ref(set_, API_VERSION, KIND))
    pod["metadata"]["name"] = get_pod_name(set_, ordinal)
    init_identity(set_, pod)
    update_storage(set_, pod)
    return pod


def new_versioned_stateful_set_pod(
    current_set: Mapping[str, Any],
    update_set: Mapping[str, Any],
    current_revision: str,
    update_revision: str,
    ordinal: int,
) -> Object:
    """The member with ``ordinal`` at the revision it should have, labelled with it.

    ``current_set`` and ``update_set`` are the set at its current and update revisions
    (:func:`~kcontrol_controllers.statefulset._revisions.apply_revision`). A member is made
    from the current revision when its ordinal is below ``start + partition``, or - with a
    ``RollingUpdate`` strategy that has no ``rollingUpdate`` block - below ``start +
    status.currentReplicas``; otherwise from the update revision. As upstream (whose
    condition reads ``rolling && (noBlock && below) || (block && belowPartition)``), the
    partition counts whatever the strategy type; validation allows a ``rollingUpdate``
    block only with ``RollingUpdate``.
    """
    rolling_update = update_strategy(current_set).get("rollingUpdate")
    start = get_start_ordinal(current_set)
    if rolling_update is None:
        use_current = update_strategy_type(
            current_set
        ) == ROLLING_UPDATE and ordinal < start + status_int(current_set, "currentReplicas")
    else:
        use_current = ordinal < start + int(rolling_update.get("partition") or 0)
    if use_current:
        pod = new_stateful_set_pod(current_set, ordinal)
        set_pod_revision(pod, current_revision)
    else:
        pod = new_stateful_set_pod(update_set, ordinal)
        set_pod_revision(pod, update_revision)
    return pod


# -- events ------------------------------------------------------------------------------------


def pod_event(
    verb: str, set_: Mapping[str, Any], pod: Mapping[str, Any], error: BaseException | None
) -> tuple[str, str, str]:
    """The event (type, reason, message) for ``verb`` (``create``, ``update``, ``delete``)
    done to ``pod``: ``Normal SuccessfulCreate "create Pod web-0 in StatefulSet web
    successful"``, or ``Warning FailedCreate "... failed error: <error>"``."""
    action = verb.lower()
    if error is None:
        message = f"{action} Pod {name(pod)} in StatefulSet {name(set_)} successful"
        return EVENT_NORMAL, f"Successful{verb.title()}", message
    message = f"{action} Pod {name(pod)} in StatefulSet {name(set_)} failed error: {error}"
    return EVENT_WARNING, f"Failed{verb.title()}", message


def claim_event(
    verb: str,
    set_: Mapping[str, Any],
    pod: Mapping[str, Any],
    claim: Mapping[str, Any],
    error: BaseException | None,
) -> tuple[str, str, str]:
    """The event (type, reason, message) for ``verb`` done to ``pod``'s ``claim``:
    ``Normal SuccessfulCreate "create Claim data-web-0 Pod web-0 in StatefulSet web
    success"``, or ``Warning FailedCreate "create Claim ... for Pod ... failed error: ..."``.
    """
    action = verb.lower()
    pod_name, set_name, claim_name = name(pod), name(set_), name(claim)
    if error is None:
        message = f"{action} Claim {claim_name} Pod {pod_name} in StatefulSet {set_name} success"
        return EVENT_NORMAL, f"Successful{verb.title()}", message
    message = (
        f"{action} Claim {claim_name} for Pod {pod_name} in StatefulSet {set_name}"
        f" failed error: {error}"
    )
    return EVENT_WARNING, f"Failed{verb.title()}", message


def conflicting_controller_event(claim_name: str) -> tuple[str, str, str]:
    """The warning recorded when another controller owns a claim, so its retention policy is
    not applied (the message is upstream's, misspelling included)."""
    return (
        EVENT_WARNING,
        "ConflictingController",
        f"PersistentVolumeClaim {claim_name} has a conflicting OwnerReference that acts as a"
        " manging controller, the retention policy is ignored for this claim",
    )
