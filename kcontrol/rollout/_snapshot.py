"""What the rollout view shows, as plain data: one Deployment, its ReplicaSets and events.

A :class:`Snapshot` is taken from the informers' caches (:func:`take_snapshot`) and rendered by
:func:`kcontrol.rollout.render`; both are pure, so the view can be tested without a cluster or
a terminal. :func:`rollout_status` is ``kubectl rollout status``'s verdict on a Deployment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kcontrol.client import Object
from kcontrol.metatime import parse_time

__all__ = [
    "Snapshot",
    "event_time",
    "is_new_replicaset",
    "revision",
    "rollout_status",
    "take_snapshot",
]

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One frame's worth of state. Objects are the informers' shared dicts: never mutate them.

    - ``deployment``: None while it does not exist (the view then waits for it);
    - ``replicasets``: those the Deployment controls (controller owner reference to its uid);
    - ``events``: core/v1 Events about the Deployment or those ReplicaSets, oldest first;
    - ``synced``: False until the informers' first lists are in;
    - ``header`` and ``notice``: free text shown above and below (the local mode's commands
      and what it is doing);
    - ``now``: the wall clock the event ages are computed from.
    """

    namespace: str
    name: str
    deployment: Object | None = None
    replicasets: tuple[Object, ...] = ()
    events: tuple[Object, ...] = ()
    synced: bool = True
    header: tuple[str, ...] = ()
    notice: str = ""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


def take_snapshot(
    namespace: str,
    name: str,
    *,
    deployments: Iterable[Object],
    replicasets: Iterable[Object],
    events: Iterable[Object],
    now: datetime,
    max_events: int = 8,
    synced: bool = True,
    header: tuple[str, ...] = (),
    notice: str = "",
) -> Snapshot:
    """Select what belongs to Deployment ``namespace/name`` from cached objects.

    ReplicaSets and events are matched by uid (owner reference, ``involvedObject.uid``), so a
    Deployment deleted and recreated under the same name never shows its predecessor's.
    Keeps the ``max_events`` most recent events.
    """
    deployment = next(
        (
            d
            for d in deployments
            if d["metadata"]["name"] == name and d["metadata"].get("namespace") == namespace
        ),
        None,
    )
    owned: list[Object] = []
    chosen: list[Object] = []
    if deployment is not None:
        uid = deployment["metadata"].get("uid")
        owned = [rs for rs in replicasets if _controller_uid(rs) == uid]
        uids = {uid} | {rs["metadata"].get("uid") for rs in owned}
        chosen = [e for e in events if (e.get("involvedObject") or {}).get("uid") in uids]
        chosen.sort(key=event_time)
        chosen = chosen[-max_events:] if max_events > 0 else []
        owned.sort(key=lambda rs: _replicaset_order(deployment, rs))
    return Snapshot(
        namespace=namespace,
        name=name,
        deployment=deployment,
        replicasets=tuple(owned),
        events=tuple(chosen),
        synced=synced,
        header=header,
        notice=notice,
        now=now,
    )


def is_new_replicaset(deployment: Object, replicaset: Object) -> bool:
    """Whether ``replicaset`` runs the Deployment's current pod template: equal templates,
    ignoring the ``pod-template-hash`` label (how the Deployment controller picks it)."""
    template = (deployment.get("spec") or {}).get("template") or {}
    return _without_hash(template) == _without_hash(
        (replicaset.get("spec") or {}).get("template") or {}
    )


def rollout_status(deployment: Object) -> tuple[bool, str]:
    """``kubectl rollout status``'s verdict: (done, message), with its wording."""
    name = deployment["metadata"]["name"]
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    if deployment["metadata"].get("generation", 0) > status.get("observedGeneration", 0):
        return False, "Waiting for deployment spec update to be observed..."
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and (
            condition.get("reason") == "ProgressDeadlineExceeded"
        ):
            return False, f'deployment "{name}" exceeded its progress deadline'
    desired = spec.get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    replicas = status.get("replicas", 0)
    available = status.get("availableReplicas", 0)
    waiting = f'Waiting for deployment "{name}" rollout to finish: '
    if updated < desired:
        return False, waiting + f"{updated} out of {desired} new replicas have been updated..."
    if replicas > updated:
        return False, waiting + f"{replicas - updated} old replicas are pending termination..."
    if available < updated:
        return False, waiting + f"{available} of {updated} updated replicas are available..."
    return True, f'deployment "{name}" successfully rolled out'


def event_time(event: Object) -> datetime:
    """When an event last happened: ``eventTime``, ``lastTimestamp``, ``firstTimestamp`` or
    its creation time, whichever is set first (the epoch when none is)."""
    for value in (
        event.get("eventTime"),
        event.get("lastTimestamp"),
        event.get("firstTimestamp"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    ):
        parsed = parse_time(value)
        if parsed is not None:
            return parsed
    return datetime.fromtimestamp(0, UTC)


def revision(obj: Object) -> int:
    """The ``deployment.kubernetes.io/revision`` annotation (0 when absent or malformed)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION_ANNOTATION, "")
    try:
        return int(value)
    except ValueError:
        return 0


def _controller_uid(obj: Object) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            uid: str | None = ref.get("uid")
            return uid
    return None


def _replicaset_order(deployment: Object, replicaset: Object) -> tuple[int, int, str]:
    """The new ReplicaSet first, then the most recent revisions."""
    new = 0 if is_new_replicaset(deployment, replicaset) else 1
    return (new, -revision(replicaset), replicaset["metadata"]["name"])


def _without_hash(template: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    result = dict(template)
    if metadata:
        result["metadata"] = metadata
    else:
        result.pop("metadata", None)
    return result
